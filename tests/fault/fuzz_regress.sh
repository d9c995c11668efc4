#!/usr/bin/env bash
# Replays every input under tests/fuzz/regress/NAME/ (crashes the fuzzers
# once found, now fixed) and tests/fuzz/seeds/NAME/ through the harness
# fuzz_NAME built as a plain program ($SS_BUILD/fuzz-replay/NAME; sanitized
# under make sanitize).  Each must run to the end.
. "$(dirname "$0")/../lib.sh"
n=0
for src in "$SS_ROOT"/tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c); name=${name#fuzz_}
	bin=$SS_BUILD/fuzz-replay/$name
	if [ ! -x "$bin" ]; then t_fail "fuzz replay $name: $bin built"; continue; fi
	for kind in regress seeds; do
		d=$SS_ROOT/tests/fuzz/$kind/$name
		[ -d "$d" ] || continue
		files=("$d"/*)
		[ -e "${files[0]}" ] || continue
		# a harness's "fuzz-opts: -detect_leaks=0" holds for its replay too
		asan=${ASAN_OPTIONS:-}
		grep -q '^ \* fuzz-opts:.*-detect_leaks=0' "$src" && asan="$asan${asan:+:}detect_leaks=0"
		out=$(ASAN_OPTIONS=$asan "$bin" "${files[@]}" 2>&1); rc=$?
		_res $rc "fuzz replay $name: ${#files[@]} $kind input(s)" "$(printf '%s' "$out" | tail -5)"
		n=$((n + 1))
	done
done
[ $n -gt 0 ] || t_fail "no fuzz inputs replayed"
t_done
