/* cpu.h - the instruction sets this process uses, chosen once at run time.
 *
 * The suite is compiled for baseline x86-64; the hand-written kernels exist
 * once per level below, each in its own compile unit (files named
 * *_avx2.c, *_avx512.c, *_avx512bf16.c, *_amx.c get that level's -m flags from the
 * Makefile), and each caller picks the unit of ss_cpu_isa():
 *
 *     switch (ss_cpu_isa()) { case SS_ISA_AVX512BF16: ... }
 *   or a table indexed by it:  ops[ss_cpu_isa()]->f(...)
 *
 * Levels are ordered: a CPU with a level has every level below it.
 *   SS_ISA_C           portable C (any x86-64)
 *   SS_ISA_AVX2        AVX2 + FMA + F16C (x86-64-v3's vector part)
 *   SS_ISA_AVX512      AVX-512 F, BW, VL, DQ
 *   SS_ISA_AVX512BF16  AVX-512 and AVX512_BF16 (vdpbf16ps, vcvtne2ps2bf16)
 *   SS_ISA_AMX         AVX512_BF16 and AMX-TILE + AMX-BF16 (tdpbf16ps);
 *                      files *_amx.c (attention's bf16 tiles alone)
 * A level counts only when the OS saves its registers (XGETBV); AMX also
 * needs Linux's permission for the tile data (arch_prctl
 * ARCH_REQ_XCOMP_PERM), asked for once when the level is first read.
 *
 * The environment variable SINKSCOPE_ISA=c|avx2|avx512|avx512bf16|amx forces
 * a lower level (tests run every path the machine has this way).  Every
 * program checks it when it parses its options (ss_opt_parse calls
 * ss_cpu_check): a name that is no level, or a level this CPU lacks, is a
 * usage error with one line naming the variable.  Library code that runs
 * before (or without) that check gets the best level when the variable is
 * bad.  Thread-safe; the level is read with a relaxed atomic load, cheap
 * enough to ask per call. */
#ifndef SS_CPU_H
#define SS_CPU_H

#include "util/err.h"

typedef enum ss_isa {
	SS_ISA_C = 0,
	SS_ISA_AVX2,
	SS_ISA_AVX512,
	SS_ISA_AVX512BF16,
	SS_ISA_AMX,
	SS_ISA_N
} ss_isa;

/* the level in use: SINKSCOPE_ISA when it is valid for this CPU, else the
 * best the CPU has (or what ss_cpu_force set) */
ss_isa ss_cpu_isa(void);
/* the best level this CPU (and OS) supports */
ss_isa ss_cpu_best(void);
/* "c", "avx2", "avx512", "avx512bf16", "amx" */
const char *ss_isa_name(ss_isa isa);
/* name -> level; -1 when the name is none of them */
int ss_isa_parse(const char *name, ss_isa *isa);
/* SINKSCOPE_ISA, when set: -1 with a message in e (status SS_EXIT_USAGE)
 * when it names no level or one the CPU lacks */
int ss_cpu_check(ss_err *e);
/* use level isa from now on (tests, benchmarks); -1 with a message when
 * the CPU lacks it */
int ss_cpu_force(ss_isa isa, ss_err *e);

#endif
