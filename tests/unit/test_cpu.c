/* test_cpu.c - util/cpu.h: the level found by CPUID against the flags the
 * kernel reports in /proc/cpuinfo (an independent reading of the same
 * CPU), names, forcing, and SINKSCOPE_ISA's checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util/cpu.h"

/* 1 when every flag of the space-separated list is in /proc/cpuinfo's
 * first "flags" line */
static int has_flags(const char *line, const char *list)
{
	char buf[256], *save = NULL;
	snprintf(buf, sizeof buf, "%s", list);
	for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char pat[64];
		snprintf(pat, sizeof pat, " %s ", w);
		if (!strstr(line, pat))
			return 0;
	}
	return 1;
}

static void test_best_matches_cpuinfo(void **st)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		skip();
	static char line[8192], padded[8200];
	int found = 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "flags", 5)) {
			found = 1;
			break;
		}
	fclose(f);
	if (!found)
		skip();
	line[strcspn(line, "\n")] = 0;
	snprintf(padded, sizeof padded, " %s ", strchr(line, ':') + 1);
	ss_isa want = SS_ISA_C;
	if (has_flags(padded, "avx2 fma f16c"))
		want = SS_ISA_AVX2;
	if (want == SS_ISA_AVX2 && has_flags(padded, "avx512f avx512bw avx512vl avx512dq"))
		want = SS_ISA_AVX512;
	if (want == SS_ISA_AVX512 && has_flags(padded, "avx512_bf16"))
		want = SS_ISA_AVX512BF16;
	/* the OS's part (XCR0, arch_prctl) shows in the flags: Linux lists
	 * amx_tile only where it enabled the tile state */
	if (want == SS_ISA_AVX512BF16 && has_flags(padded, "amx_tile amx_bf16"))
		want = SS_ISA_AMX;
	assert_int_equal(ss_cpu_best(), want);
}

static void test_names_and_force(void **st)
{
	for (int i = 0; i < SS_ISA_N; i++) {
		ss_isa v;
		assert_int_equal(ss_isa_parse(ss_isa_name((ss_isa)i), &v), 0);
		assert_int_equal(v, i);
	}
	ss_isa v;
	assert_int_equal(ss_isa_parse("avx512f", &v), -1);
	assert_int_equal(ss_isa_parse("", &v), -1);
	ss_err e = {0};
	ss_isa best = ss_cpu_best();
	for (int i = 0; i <= (int)best; i++) {
		assert_int_equal(ss_cpu_force((ss_isa)i, &e), 0);
		assert_int_equal(ss_cpu_isa(), i);
	}
	if (best + 1 < SS_ISA_N) {
		assert_int_equal(ss_cpu_force(best + 1, &e), -1);
		assert_int_equal(ss_cpu_isa(), best);   /* unchanged */
	}
}

static void test_check_env(void **st)
{
	ss_err e = {0};
	unsetenv("SINKSCOPE_ISA");
	assert_int_equal(ss_cpu_check(&e), 0);
	setenv("SINKSCOPE_ISA", "c", 1);
	assert_int_equal(ss_cpu_check(&e), 0);
	setenv("SINKSCOPE_ISA", "sse9", 1);
	assert_int_equal(ss_cpu_check(&e), -1);
	assert_int_equal(e.status, SS_EXIT_USAGE);
	assert_non_null(strstr(e.msg, "SINKSCOPE_ISA=sse9: not one of c, avx2, avx512, avx512bf16, amx"));
	if (ss_cpu_best() + 1 < SS_ISA_N) {
		ss_err e2 = {0};
		setenv("SINKSCOPE_ISA", ss_isa_name(ss_cpu_best() + 1), 1);
		assert_int_equal(ss_cpu_check(&e2), -1);
		assert_non_null(strstr(e2.msg, "this CPU lacks it"));
	}
	unsetenv("SINKSCOPE_ISA");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_best_matches_cpuinfo),
		cmocka_unit_test(test_names_and_force),
		cmocka_unit_test(test_check_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
