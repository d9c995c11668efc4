#!/usr/bin/env bash
# tests/lint/layers.sh - the library's folders are layers (tests/lint/layers.py),
# and the check itself catches a planted violation.
: "${SS_ROOT:=$(cd "$(dirname "$0")/../.." && pwd)}"
/usr/bin/python3 "$SS_ROOT/tests/lint/layers.py" | sed '/^1\.\./d'
# self-test: a util header including an io header, and two modules needing
# each other, in a throw-away tree
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/src/lib/util" "$t/src/lib/io" "$t/build/lib/util" "$t/build/lib/io" "$t/tests"
printf '#include "io/b.h"\nint a(void);\n' >"$t/src/lib/util/a.h"
printf 'int b(void);\n' >"$t/src/lib/io/b.h"
printf '#include "io/b.h"\nint a(void) { return b(); }\n' >"$t/src/lib/util/a.c"
printf '#include "util/a.h"\nint b(void) { return a(); }\n' >"$t/src/lib/io/b.c"
for m in util/a io/b; do cc -c -I"$t/src/lib" "$t/src/lib/$m.c" -o "$t/build/lib/$m.o"; done
out=$(SS_ROOT=$t SS_BUILD=$t/build /usr/bin/python3 "$SS_ROOT/tests/lint/layers.py")
n=$(/usr/bin/python3 "$SS_ROOT/tests/lint/layers.py" | grep -c '^ok\|^not ok')
for want in 'not ok 1 - includes' 'not ok 2 - no module uses' 'not ok 3 - no cycle'; do
	n=$((n + 1))
	if grep -q "^$want" <<<"$out"; then echo "ok $n - self-test: planted violation caught ($want)"
	else echo "not ok $n - self-test: planted violation missed ($want)"; echo "$out" | sed 's/^/#   /'; fi
done
echo "1..$n"
