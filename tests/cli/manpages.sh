#!/usr/bin/env bash
# Every program has a man page that passes mandoc -Tlint and whose SYNOPSIS
# matches the usage lines of --help (whitespace-insensitive).
. "$(dirname "$0")/../lib.sh"
norm() { tr -s ' \t\n' ' ' | sed 's/^ //; s/ $//'; }
for p in "$SS_BIN"/*; do
	[ -x "$p" ] || continue
	n=$(basename "$p")
	m=$SS_ROOT/man/man1/$n.1
	if [ ! -f "$m" ]; then t_fail "$n: man page man/man1/$n.1 exists"; continue; fi
	lint=$(mandoc -Tlint -W warning "$m" 2>&1)
	t_eq "$n: mandoc -Tlint is clean" "" "$lint"
	help=$("$p" --help); rc=$?
	t_eq "$n: --help exits 0" 0 $rc
	u=$(printf '%s\n' "$help" | awk '/^usage: /{sub(/^usage: /,""); print; f=1; next} f && /^       /{print; next} {f=0}' | norm)
	s=$(mandoc -Tascii -O width=1000 "$m" | col -b | awk '/^SYNOPSIS/{f=1; next} /^[A-Z]/{f=0} f' | norm)
	t_eq "$n: SYNOPSIS matches --help" "$u" "$s"
	v=$("$p" --version); t_match "$n: --version" "^$n \\(sinkscope\\) [0-9]" "$v"
	t_fails "$n: unknown option is a usage error (2)" 2 "^$n: .*unknown option" "$p" --no-such-option
done
for m in "$SS_ROOT"/man/man5/*.5 "$SS_ROOT"/man/man7/*.7; do
	[ -f "$m" ] || continue
	t_eq "$(basename "$m"): mandoc -Tlint is clean" "" "$(mandoc -Tlint -W warning "$m" 2>&1)"
done
[ "$_n" -eq 0 ] && t_skip "no programs built yet" "bin/ is empty"
t_done
