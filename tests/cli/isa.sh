#!/usr/bin/env bash
# SINKSCOPE_ISA (util/cpu.h): a name that is no level, or a level this CPU
# lacks, is a usage error of every program: one line naming the variable,
# exit 2, before any data is read; a level it has runs.
. "$(dirname "$0")/../lib.sh"
for p in sinkdetect actdump; do [ -x "$SS_BIN/$p" ] || { t_skip "isa" "$p not built"; t_done; exit 0; }; done
cd "$TMP" || exit 1
t_fails "SINKSCOPE_ISA=sse9: usage error naming the variable" 2 \
	'^sinkdetect: SINKSCOPE_ISA=sse9: not one of c, avx2, avx512, avx512bf16, amx$' env SINKSCOPE_ISA=sse9 sinkdetect nosuch.h5
t_fails "SINKSCOPE_ISA=sse9 in actdump too" 2 '^actdump: SINKSCOPE_ISA=sse9: not one of' \
	env SINKSCOPE_ISA=sse9 actdump -m nosuch --text nosuch.txt -o x.h5
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
if [[ $flags != *" avx512_bf16 "* ]]; then
	t_fails "SINKSCOPE_ISA=avx512bf16 on a CPU without it: says so" 2 \
		'^sinkdetect: SINKSCOPE_ISA=avx512bf16: this CPU lacks it \(it has c' env SINKSCOPE_ISA=avx512bf16 sinkdetect nosuch.h5
elif [[ $flags != *" amx_tile "* || $flags != *" amx_bf16 "* ]]; then
	t_fails "SINKSCOPE_ISA=amx on a CPU without it: says so" 2 \
		'^sinkdetect: SINKSCOPE_ISA=amx: this CPU lacks it \(it has c, avx2, avx512, avx512bf16\)' env SINKSCOPE_ISA=amx sinkdetect nosuch.h5
else
	t_skip "SINKSCOPE_ISA above the CPU" "this CPU has every level"
fi
# a level the CPU has: the program goes on to its own error (the missing file)
t_fails "SINKSCOPE_ISA=c runs (to the missing file)" 1 'nosuch\.h5' env SINKSCOPE_ISA=c sinkdetect nosuch.h5
t_done
