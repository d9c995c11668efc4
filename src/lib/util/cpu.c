/* cpu.c - run-time instruction-set levels by CPUID and XGETBV; see cpu.h. */
#include "util/cpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#if defined __x86_64__ || defined __i386__
#include <cpuid.h>
#endif
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif

static const char *const names[SS_ISA_N] = {"c", "avx2", "avx512", "avx512bf16", "amx"};
static ss_isa best = SS_ISA_C;
static atomic_int level = -1;   /* in use; -1 before init */
static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined __x86_64__ || defined __i386__
static unsigned long long xgetbv0(void)
{
	unsigned lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((unsigned long long)hi << 32) | lo;
}

/* Linux enables the 8 KiB tile data state per process on request
 * (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA; kernel 5.16+);
 * without it the first tile instruction faults.  The permission is the
 * whole process's, so asking once here covers every thread. */
static int amx_permitted(void)
{
#if defined __linux__ && defined SYS_arch_prctl
	return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
	return 0;
#endif
}

static ss_isa detect(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return SS_ISA_C;
	int fma = c >> 12 & 1, osxsave = c >> 27 & 1, avx = c >> 28 & 1, f16c = c >> 29 & 1;
	if (!osxsave || !avx)
		return SS_ISA_C;
	unsigned long long xcr0 = xgetbv0();
	if ((xcr0 & 0x6) != 0x6)   /* XMM and YMM state */
		return SS_ISA_C;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return SS_ISA_C;
	int avx2 = b >> 5 & 1, f = b >> 16 & 1, dq = b >> 17 & 1, bw = b >> 30 & 1, vl = b >> 31 & 1;
	if (!(avx2 && fma && f16c))
		return SS_ISA_C;
	if (!(f && dq && bw && vl) || (xcr0 & 0xe0) != 0xe0)   /* opmask, ZMM0-15 high, ZMM16-31 */
		return SS_ISA_AVX2;
	unsigned a1 = 0, b1, c1, d1;
	if (!__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) || !(a1 >> 5 & 1))
		return SS_ISA_AVX512;
	int amx_bf16 = d >> 22 & 1, amx_tile = d >> 24 & 1;   /* leaf 7.0 EDX */
	if (!amx_bf16 || !amx_tile || (xcr0 & 0x60000) != 0x60000)   /* XTILECFG, XTILEDATA */
		return SS_ISA_AVX512BF16;
	if (!amx_permitted())
		return SS_ISA_AVX512BF16;
	return SS_ISA_AMX;
}
#else
static ss_isa detect(void) { return SS_ISA_C; }
#endif

static void init(void)
{
	best = detect();
	ss_isa want = best;
	const char *s = getenv("SINKSCOPE_ISA");
	ss_isa v;
	if (s && *s && ss_isa_parse(s, &v) == 0 && v <= best)
		want = v;
	int expect = -1;   /* ss_cpu_force may have set it already: keep that */
	atomic_compare_exchange_strong(&level, &expect, (int)want);
}

ss_isa ss_cpu_isa(void)
{
	int l = atomic_load_explicit(&level, memory_order_relaxed);
	if (l >= 0)
		return (ss_isa)l;
	pthread_once(&once, init);
	return (ss_isa)atomic_load(&level);
}

ss_isa ss_cpu_best(void)
{
	pthread_once(&once, init);
	return best;
}

const char *ss_isa_name(ss_isa isa)
{
	return isa >= 0 && isa < SS_ISA_N ? names[isa] : "?";
}

int ss_isa_parse(const char *name, ss_isa *isa)
{
	for (int i = 0; i < SS_ISA_N; i++)
		if (!strcmp(name, names[i])) {
			*isa = (ss_isa)i;
			return 0;
		}
	return -1;
}

/* "c, avx2, avx512" */
static void levels_upto(ss_isa top, char *buf, size_t n)
{
	buf[0] = 0;
	for (int i = 0; i <= (int)top; i++) {
		strncat(buf, i ? ", " : "", n - strlen(buf) - 1);
		strncat(buf, names[i], n - strlen(buf) - 1);
	}
}

int ss_cpu_check(ss_err *e)
{
	const char *s = getenv("SINKSCOPE_ISA");
	if (!s || !*s)
		return 0;
	ss_isa v, b = ss_cpu_best();
	char have[64];
	levels_upto(b, have, sizeof have);
	if (ss_isa_parse(s, &v) < 0)
		return ss_err_status(e, SS_EXIT_USAGE, "SINKSCOPE_ISA=%s: not one of c, avx2, avx512, avx512bf16, amx", s);
	if (v > b)
		return ss_err_status(e, SS_EXIT_USAGE, "SINKSCOPE_ISA=%s: this CPU lacks it (it has %s)", s, have);
	return 0;
}

int ss_cpu_force(ss_isa isa, ss_err *e)
{
	ss_isa b = ss_cpu_best();
	if (isa < 0 || isa >= SS_ISA_N || isa > b)
		return ss_err_set(e, "instruction set %s: this CPU lacks it (best: %s)", ss_isa_name(isa),
		                  ss_isa_name(b));
	atomic_store(&level, (int)isa);
	return 0;
}
