# tests/lib.sh - TAP helpers for shell tests.  Source it, call the t_*
# functions, end with t_done.  Programs are run from $SS_BIN.
set -u
: "${SS_ROOT:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${SS_BIN:=$SS_ROOT/bin}" "${SS_BUILD:=$SS_ROOT/build}"
export PATH="$SS_BIN:$PATH" SINKSCOPE_NO_PROGRESS=1
PY=/usr/bin/python3
_n=0
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sstest.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

_res() { # status desc [diag...]
	_n=$((_n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $_n - $2"; else
		echo "not ok $_n - $2"; shift 2; for l in "$@"; do printf '#   %s\n' "$l"; done; fi
}
t_pass() { _res 0 "$1"; }
t_fail() { _res 1 "$@"; }
t_skip() { _n=$((_n + 1)); echo "ok $_n - $1 # SKIP ${2:-}"; }
# t_ok DESC CMD...: CMD exits 0
t_ok() { local d=$1; shift; local out; out=$("$@" 2>&1); local rc=$?
	_res $rc "$d" "exit $rc: $*" "$(printf '%s' "$out" | tail -5)"; }
# t_eq DESC EXPECTED ACTUAL
t_eq() { if [ "$2" == "$3" ]; then _res 0 "$1"; else _res 1 "$1" "expected: $2" "got:      $3"; fi; }
# t_match DESC REGEX STRING
t_match() { if printf '%s' "$3" | grep -qE -- "$2"; then _res 0 "$1"; else _res 1 "$1" "expected match: $2" "got: $3"; fi; }
# t_num DESC EXPECTED ACTUAL RELTOL: |a-e| <= tol*max(1,|e|)
t_num() { if awk -v e="$2" -v a="$3" -v t="$4" 'BEGIN{d=a-e; if(d<0)d=-d; m=e<0?-e:e; if(m<1)m=1; exit !(d<=t*m)}'; then
	_res 0 "$1"; else _res 1 "$1" "expected $2 (rel tol $4), got $3"; fi; }
# t_fails DESC STATUS REGEX CMD...: exits STATUS, stderr is ONE line matching REGEX,
# stdout empty.  Set T_OUT=FILE to also require that FILE does not exist afterwards.
t_fails() { local d=$1 st=$2 re=$3; shift 3
	"$@" >"$TMP/.out" 2>"$TMP/.err" </dev/null; local rc=$?
	local nl; nl=$(wc -l <"$TMP/.err" | tr -d ' ')
	local msg; msg=$(cat "$TMP/.err")
	if [ $rc -ne "$st" ]; then _res 1 "$d" "exit $rc, expected $st: $*" "stderr: $msg"
	elif [ "$nl" != 1 ]; then _res 1 "$d" "stderr has $nl lines, expected 1" "$msg"
	elif ! grep -qE -- "$re" "$TMP/.err"; then _res 1 "$d" "stderr does not match $re" "$msg"
	elif [ -s "$TMP/.out" ] && [ "$st" -ne 2 ]; then _res 1 "$d" "stdout not empty on failure"
	elif [ -n "${T_OUT:-}" ] && ls "$T_OUT"* >/dev/null 2>&1; then _res 1 "$d" "partial output left: $(ls "$T_OUT"* | head -3)"
	else _res 0 "$d"; fi; }
# t_fails_in DESC STATUS REGEX INPUTFILE CMD...: same, with stdin from INPUTFILE
t_fails_in() { local d=$1 st=$2 re=$3 in=$4; shift 4
	"$@" >"$TMP/.out" 2>"$TMP/.err" <"$in"; local rc=$?
	local nl; nl=$(wc -l <"$TMP/.err" | tr -d ' ')
	if [ $rc -ne "$st" ] || [ "$nl" != 1 ] || ! grep -qE -- "$re" "$TMP/.err"; then
		_res 1 "$d" "exit $rc (want $st), $nl stderr lines: $(cat "$TMP/.err")"; else _res 0 "$d"; fi; }
have_py() { $PY -c "import $1" >/dev/null 2>&1; }
t_done() { echo "1..$_n"; }
