/* opt.c - options and YAML config; see opt.h. */
#include "util/opt.h"
#include "util/cpu.h"
#include "util/par.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

/* strings copied out of config files, freed by ss_opt_free() */
static char **owned;
static size_t n_owned;

void ss_opt_free(void)
{
	for (size_t i = 0; i < n_owned; i++)
		free(owned[i]);
	free(owned);
	owned = NULL;
	n_owned = 0;
}

int ss_parse_long(const char *s, long *v)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	long x = strtol(s, &end, 10);
	if (end == s || *end)
		return -1;
	if (errno == ERANGE)
		return -2; /* a whole integer, too large for a long */
	if (errno)
		return -1;
	*v = x;
	return 0;
}

int ss_parse_double(const char *s, double *v)
{
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || *end || !isfinite(x))
		return -1;
	*v = x;
	return 0;
}

char *ss_format_range(long a, long b, char *buf, size_t n)
{
	if (a == b)
		snprintf(buf, n, "%ld", a);
	else
		snprintf(buf, n, "%ld-%ld", a, b);
	return buf;
}

int ss_parse_layers_from(const char *s, int lo, int n, unsigned char *mask, const char *what,
                         ss_err *e)
{
	memset(mask, 0, (size_t)n + 1);
	if (!strcmp(s, "all")) {
		memset(mask + lo, 1, (size_t)(n - lo + 1));
		return 0;
	}
	const char *p = s;
	if (!*p)
		return ss_err_status(e, SS_EXIT_USAGE, "%s: empty layer list", what);
	while (*p) {
		char *end;
		errno = 0;
		long a = strtol(p, &end, 10), b;
		if (end == p || errno)
			return ss_err_status(e, SS_EXIT_USAGE, "%s: bad layer list '%s'", what, s);
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || errno)
				return ss_err_status(e, SS_EXIT_USAGE, "%s: bad layer list '%s'", what, s);
		}
		char got[48], have[48];
		ss_format_range(a, b, got, sizeof got);
		ss_format_range(lo, n, have, sizeof have);
		if (a > b)
			return ss_err_status(e, SS_EXIT_USAGE, "%s: layer range %s is reversed (write %ld-%ld)",
			                     what, got, b, a);
		if (a < lo || b > n)
			return ss_err_status(e, SS_EXIT_USAGE, "%s: layer%s %s outside %s", what,
			                     a == b ? "" : " range", got, have);
		for (long l = a; l <= b; l++)
			mask[l] = 1;
		if (*end == ',')
			end++;
		else if (*end)
			return ss_err_status(e, SS_EXIT_USAGE, "%s: bad layer list '%s'", what, s);
		p = end;
	}
	return 0;
}

int ss_parse_range(const char *s, long *a, long *b, const char *what, ss_err *e)
{
	char *end;
	errno = 0;
	long x = strtol(s, &end, 10), y = x;
	if (end != s && !errno && *end == '-') {
		const char *q = end + 1;
		y = strtol(q, &end, 10);
		if (end == q)
			end = (char *)s;
	}
	if (end == s || *end || errno || !isdigit((unsigned char)*s))
		return ss_err_status(e, SS_EXIT_USAGE, "%s: expected A or A-B, got '%s'", what, s);
	char got[48];
	ss_format_range(x, y, got, sizeof got);
	if (x > y)
		return ss_err_status(e, SS_EXIT_USAGE, "%s: layer range %s is reversed (write %ld-%ld)",
		                     what, got, y, x);
	if (x < 1)
		return ss_err_status(e, SS_EXIT_USAGE, "%s: layer%s %s: layers start at 1", what,
		                     x == y ? "" : " range", got);
	*a = x;
	*b = y;
	return 0;
}

int ss_parse_layers(const char *s, int n, unsigned char *mask, const char *what, ss_err *e)
{
	return ss_parse_layers_from(s, 1, n, mask, what, e);
}

int ss_opt_threads(long *threads, ss_err *e)
{
	if (*threads == SS_THREADS_UNSET) {
		*threads = ss_ncpu();
		return 0;
	}
	if (*threads < 1 || *threads > SS_THREADS_MAX)
		return ss_err_status(e, SS_EXIT_USAGE, "--threads: %ld out of range 1-%d", *threads,
		                     SS_THREADS_MAX);
	return 0;
}

int ss_parse_size(const char *s, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (end == s || errno || !(x > 0))
		return -1;
	double mul = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K': mul = 1024.0; end++; break;
	case 'M': mul = 1048576.0; end++; break;
	case 'G': mul = 1073741824.0; end++; break;
	case 'T': mul = 1099511627776.0; end++; break;
	}
	if (*end == 'B' || *end == 'b' || (*end == 'i' && end[1] == 'B' && (end += 1)))
		end++;
	if (*end)
		return -1;
	*v = x * mul;
	return 0;
}

char *ss_format_size(double bytes, char *buf, size_t n)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	int u = 0;
	double x = bytes;
	while (u < 5 && fabs(x) >= 1023.5) { /* 1023.5 B prints as 1 KiB, never "1.02e+03 B" */
		x /= 1024.0;
		u++;
	}
	if (u == 0 || fabs(x) >= 99.95) /* %.3g would write 1000 as 1e+03 */
		snprintf(buf, n, "%.0f %s", x, unit[u]);
	else
		snprintf(buf, n, "%.3g %s", x, unit[u]);
	return buf;
}

static const ss_opt *find_long(const ss_prog *p, const char *name)
{
	for (const ss_opt *o = p->opts; o && o->name; o++)
		if (!strcmp(o->name, name))
			return o;
	return NULL;
}

/* Store a textual value into an option; src names where it came from. */
/* Store a textual value into an option; src names where it came from:
 * "FILE:LINE: prog" for a config file, NULL for the command line (the
 * message then starts with the option, "--threads: expected ..."). */
static int store(const ss_prog *p, const ss_opt *o, const char *val, int from_file,
                 const char *src, ss_err *e)
{
	int st = from_file ? SS_EXIT_FAIL : SS_EXIT_USAGE;
	char who[SS_ERR_MAX / 2];
	if (src)
		snprintf(who, sizeof who, "%s: %s", src, o->name);
	else
		snprintf(who, sizeof who, "--%s", o->name);
	switch (o->type) {
	case SS_OPT_RENAMED:
		return ss_err_status(e, st, "%s: renamed --%s (%s)", who, o->arg, o->help);
	case SS_OPT_FLAG:
		if (!val || !strcmp(val, "true") || !strcmp(val, "yes") || !strcmp(val, "1"))
			*(int *)o->dst = 1;
		else if (!strcmp(val, "false") || !strcmp(val, "no") || !strcmp(val, "0"))
			*(int *)o->dst = 0;
		else
			return ss_err_status(e, st, "%s: expected true or false, got '%s'", who, val);
		break;
	case SS_OPT_INT: {
		int r = ss_parse_long(val, (long *)o->dst);
		/* --threads has one range suite-wide (ss_opt_threads); other
		 * options check theirs after parsing, so an overflow names the
		 * range of the type */
		if (r == -2 && !strcmp(o->name, "threads"))
			return ss_err_status(e, st, "%s: %s out of range 1-%d", who, val, SS_THREADS_MAX);
		if (r == -2)
			return ss_err_status(e, st, "%s: %s out of range %ld to %ld", who, val, LONG_MIN,
			                     LONG_MAX);
		if (r)
			return ss_err_status(e, st, "%s: expected an integer, got '%s'", who, val);
		break;
	}
	case SS_OPT_DOUBLE:
		if (ss_parse_double(val, (double *)o->dst))
			return ss_err_status(e, st, "%s: expected a finite number, got '%s'", who, val);
		break;
	case SS_OPT_STRING:
		if (from_file) {
			char *c = strdup(val);
			char **no = realloc(owned, (n_owned + 1) * sizeof *owned);
			if (!c || !no) {
				free(c);
				return ss_err_set(e, "%s: out of memory", who);
			}
			owned = no;
			owned[n_owned++] = c;
			*(const char **)o->dst = c;
		} else {
			*(const char **)o->dst = val;
		}
		break;
	}
	if (o->seen)
		*o->seen = 1;
	(void)p;
	return 0;
}

int ss_yaml_dup_keys(const void *doc, const char *path, ss_err *e)
{
	/* libyaml keeps every pair of a mapping, so a repeated key would let
	 * the last one win without a word; every mapping of the document is a
	 * node of d->nodes, so one pass over them sees nested ones too */
	const yaml_document_t *d = doc;
	for (yaml_node_t *n = d->nodes.start; n && n < d->nodes.top; n++) {
		if (n->type != YAML_MAPPING_NODE)
			continue;
		yaml_node_pair_t *p0 = n->data.mapping.pairs.start, *top = n->data.mapping.pairs.top;
		for (yaml_node_pair_t *a = p0; a < top; a++) {
			yaml_node_t *ka = yaml_document_get_node((yaml_document_t *)d, a->key);
			if (!ka || ka->type != YAML_SCALAR_NODE)
				continue;
			for (yaml_node_pair_t *b = p0; b < a; b++) {
				yaml_node_t *kb = yaml_document_get_node((yaml_document_t *)d, b->key);
				if (kb && kb->type == YAML_SCALAR_NODE &&
				    kb->data.scalar.length == ka->data.scalar.length &&
				    !memcmp(kb->data.scalar.value, ka->data.scalar.value, ka->data.scalar.length))
					return ss_err_set(e, "%s: line %zu: duplicate key '%s' (first at line %zu)", path,
					                  ka->start_mark.line + 1, (const char *)ka->data.scalar.value,
					                  kb->start_mark.line + 1);
			}
		}
	}
	return 0;
}

/* Read the YAML config file and apply the section named after the program. */
static int load_config(const ss_prog *p, const char *path, ss_err *e)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return ss_err_set(e, "%s: is a directory, expected a YAML file", path);
	FILE *f = fopen(path, "rb");
	if (!f)
		return ss_err_errno(e, errno, "%s", path);
	yaml_parser_t ps;
	yaml_document_t doc;
	int rc = -1;
	if (!yaml_parser_initialize(&ps)) {
		fclose(f);
		return ss_err_set(e, "%s: cannot initialise the YAML parser", path);
	}
	yaml_parser_set_input_file(&ps, f);
	if (!yaml_parser_load(&ps, &doc)) {
		ss_err_set(e, "%s:%zu: YAML: %s", path, ps.problem_mark.line + 1,
		           ps.problem ? ps.problem : "syntax error");
		yaml_parser_delete(&ps);
		fclose(f);
		return -1;
	}
	if (ss_yaml_dup_keys(&doc, path, e))
		goto done;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) { /* empty file: nothing to apply */
		rc = 0;
		goto done;
	}
	if (root->type != YAML_MAPPING_NODE) {
		ss_err_set(e, "%s:%zu: expected a mapping of program names to options", path,
		           root->start_mark.line + 1);
		goto done;
	}
	for (yaml_node_pair_t *pr = root->data.mapping.pairs.start;
	     pr < root->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(&doc, pr->key);
		yaml_node_t *v = yaml_document_get_node(&doc, pr->value);
		if (k->type != YAML_SCALAR_NODE) {
			ss_err_set(e, "%s:%zu: section names must be scalars", path, k->start_mark.line + 1);
			goto done;
		}
		if (strcmp((char *)k->data.scalar.value, p->name))
			continue; /* another program's section */
		if (v->type == YAML_SCALAR_NODE && v->data.scalar.length == 0)
			continue; /* empty section */
		if (v->type != YAML_MAPPING_NODE) {
			ss_err_set(e, "%s:%zu: %s: expected a mapping of options", path,
			           v->start_mark.line + 1, p->name);
			goto done;
		}
		for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
			yaml_node_t *ok = yaml_document_get_node(&doc, q->key);
			yaml_node_t *ov = yaml_document_get_node(&doc, q->value);
			char src[SS_ERR_MAX / 2];
			snprintf(src, sizeof src, "%s:%zu: %s", path, ok->start_mark.line + 1, p->name);
			if (ok->type != YAML_SCALAR_NODE) {
				ss_err_set(e, "%s: option names must be scalars", src);
				goto done;
			}
			const char *name = (const char *)ok->data.scalar.value;
			const ss_opt *o = find_long(p, name);
			if (!o || !strcmp(name, "config")) {
				ss_err_set(e, "%s: unknown option '%s'", src, name);
				goto done;
			}
			if (ov->type != YAML_SCALAR_NODE) {
				ss_err_set(e, "%s: %s: expected a single value", src, name);
				goto done;
			}
			if (store(p, o, (const char *)ov->data.scalar.value, 1, src, e))
				goto done;
		}
	}
	rc = 0;
done:
	yaml_document_delete(&doc);
	yaml_parser_delete(&ps);
	fclose(f);
	return rc;
}

void ss_opt_usage(const ss_prog *p, void *fp)
{
	FILE *f = fp;
	const char *s = p->synopsis;
	int first = 1;
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		fprintf(f, "%s %s %.*s\n", first ? "usage:" : "      ", p->name, (int)n, s);
		first = 0;
		s += n;
		if (*s == '\n')
			s++;
	}
}

static void help(const ss_prog *p)
{
	ss_opt_usage(p, stdout);
	printf("%s\n\noptions:\n", p->summary);
	for (const ss_opt *o = p->opts; o && o->name; o++) {
		if (o->type == SS_OPT_RENAMED)
			continue;
		char left[96];
		int n = 0;
		if (o->short_name)
			n = snprintf(left, sizeof left, "-%c, ", o->short_name);
		else
			n = snprintf(left, sizeof left, "    ");
		snprintf(left + n, sizeof left - (size_t)n, "--%s%s%s", o->name, o->arg ? " " : "",
		         o->arg ? o->arg : "");
		printf("  %-28s %s\n", left, o->help);
	}
	printf("  %-28s %s\n", "    --config FILE", "read options from the YAML FILE (section per program)");
	printf("  %-28s %s\n", "-h, --help", "print this help and exit");
	printf("  %-28s %s\n", "-V, --version", "print the version and exit");
}

int ss_opt_exit(const ss_prog *p, int r, const ss_err *e)
{
	if (r == SS_OPT_EXIT) { /* the help or version text must have reached stdout */
		ss_err w = {0};
		return ss_main_end(p->name, 0, &w);
	}
	ss_err_print(p->name, e);
	return e->status ? e->status : SS_EXIT_USAGE;
}

int ss_opt_parse(const ss_prog *p, int argc, char **argv, ss_err *e)
{
	size_t n = 0;
	for (const ss_opt *o = p->opts; o && o->name; o++)
		n++;
	struct option *lo = calloc(n + 4, sizeof *lo);
	char *shorts = calloc(2 * n + 8, 1);
	if (!lo || !shorts) {
		free(lo);
		free(shorts);
		return ss_err_set(e, "out of memory parsing options");
	}
	size_t ns = 0;
	shorts[ns++] = ':'; /* report missing arguments as ':' */
	for (size_t i = 0; i < n; i++) {
		const ss_opt *o = &p->opts[i];
		lo[i].name = o->name;
		lo[i].has_arg = o->type == SS_OPT_FLAG ? no_argument : required_argument;
		lo[i].val = 256 + (int)i;
		if (o->short_name) {
			shorts[ns++] = (char)o->short_name;
			if (o->type != SS_OPT_FLAG)
				shorts[ns++] = ':';
		}
	}
	lo[n] = (struct option){"config", required_argument, NULL, 1};
	lo[n + 1] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n + 2] = (struct option){"version", no_argument, NULL, 'V'};
	memcpy(shorts + ns, "hV", 3);

	int rc = SS_OPT_ERR;
	/* The config file first, so the command line overrides it. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		const char *cfg = NULL;
		if (!strcmp(argv[i], "--config")) {
			if (i + 1 >= argc) {
				ss_err_status(e, SS_EXIT_USAGE, "option '--config' needs an argument");
				goto done;
			}
			cfg = argv[++i];
		} else if (!strncmp(argv[i], "--config=", 9)) {
			cfg = argv[i] + 9;
		}
		if (cfg && load_config(p, cfg, e))
			goto done;
	}

	opterr = 0;
	optind = 1;
	int c, idx;
	while ((c = getopt_long(argc, argv, shorts, lo, &idx)) != -1) {
		const ss_opt *o = NULL;
		if (c >= 256) {
			o = &p->opts[c - 256];
		} else if (c == 1) {
			continue; /* --config, applied above */
		} else if (c == 'h') {
			help(p);
			rc = SS_OPT_EXIT;
			goto done;
		} else if (c == 'V') {
			printf("%s (sinkscope) %s\n", p->name, SS_VERSION);
			rc = SS_OPT_EXIT;
			goto done;
		} else if (c == '?' || c == ':') {
			const char *what = argv[optind - 1];
			if (optopt && optopt < 256 && c == '?')
				ss_err_status(e, SS_EXIT_USAGE, "unknown option '-%c'", optopt);
			else if (c == ':')
				ss_err_status(e, SS_EXIT_USAGE, "option '%s' needs an argument", what);
			else
				ss_err_status(e, SS_EXIT_USAGE, "unknown option '%s'", what);
			goto done;
		} else {
			for (const ss_opt *q = p->opts; q && q->name; q++)
				if (q->short_name == c)
					o = q;
		}
		if (!o) {
			ss_err_status(e, SS_EXIT_USAGE, "unknown option");
			goto done;
		}
		if (store(p, o, optarg, 0, NULL, e))
			goto done;
	}
	if (ss_cpu_check(e) < 0)   /* SINKSCOPE_ISA (util/cpu.h), as a usage error */
		goto done;
	rc = optind;
done:
	free(lo);
	free(shorts);
	return rc;
}

char *ss_command_line(int argc, char **argv, ss_err *e)
{
	size_t n = 1;
	for (int i = 0; i < argc; i++)
		n += 3 + 2 * strlen(argv[i]);
	char *s = ss_malloc(n, 1, "command", e), *p = s;
	if (!s)
		return NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		int q = !*a || strpbrk(a, " \t\n'\"\\$`*?;&|<>()") != NULL;
		if (i)
			*p++ = ' ';
		if (q)
			*p++ = '\'';
		for (; *a; a++) {
			if (q && *a == '\'') {
				memcpy(p, "'\\''", 4);
				p += 4;
			} else {
				*p++ = *a;
			}
		}
		if (q)
			*p++ = '\'';
	}
	*p = 0;
	return s;
}
