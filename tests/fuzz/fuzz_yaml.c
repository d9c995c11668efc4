/* fuzz_yaml.c - the YAML config reader (opt.c) on arbitrary bytes.
 *
 * The input is the --config file of a program whose option table has one
 * option of every type, so every store() path is reached; the section name
 * "p" is short so the fuzzer finds it.  Any result is fine except a crash,
 * a leak or undefined behaviour; a failed parse must leave a message. */
#include "fuzz.h"
#include "util/opt.h"

static int flag;
static long num;
static double real;
static const char *str;
static int seen_str;

static const ss_opt opts[] = {
	{"flag", 'f', SS_OPT_FLAG, &flag, NULL, "a flag", NULL},
	{"num", 'n', SS_OPT_INT, &num, "N", "an integer", NULL},
	{"real", 'r', SS_OPT_DOUBLE, &real, "X", "a number", NULL},
	{"str", 's', SS_OPT_STRING, &str, "S", "a string", &seen_str},
	{"layers", 0, SS_OPT_STRING, &str, "LIST", "a layer list", NULL},
	{NULL, 0, 0, NULL, NULL, NULL, NULL},
};
static const ss_prog prog = {"p", "[--config FILE]", "fuzzing", opts};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_tmpfile("yaml", data, size);
	if (!path)
		return 0;
	char *argv[] = {"p", "--config", (char *)path, "-n", "3", NULL};
	ss_err e = {0};
	str = NULL;
	int r = ss_opt_parse(&prog, 5, argv, &e);
	if (r == SS_OPT_ERR && !e.msg[0])
		abort(); /* an error must say what went wrong */
	if (r >= 0 && num != 3)
		abort(); /* the command line overrides the file */
	if (r >= 0 && str) { /* exercise the layer-list parser on strings from the file */
		unsigned char mask[33];
		ss_err e2 = {0};
		if (ss_parse_layers(str, 32, mask, "layers", &e2) && !e2.msg[0])
			abort();
	}
	ss_opt_free();
	return 0;
}
