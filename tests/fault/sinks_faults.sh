#!/usr/bin/env bash
# sinkdetect and sinklevels under faults (issue 9): truncated HDF5 at every
# size class (empty, inside the signature, the superblock, the object headers,
# the middle of the data, one byte short), through a path and through stdin;
# not HDF5 at all; permission denied; full disk on -o; /dev/full and a closed
# pipe on stdout; allocation failure.  Each: exit 1, one line naming the file,
# nothing on stdout, no output left.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/known.inc"
PLANT=$SS_BIN/sinkplant
INJ_SRC=$SS_ROOT/tests/tools/preload/inject.c

if [ ! -x "$SS_BIN/sinkdetect" ] || [ ! -x "$PLANT" ]; then
	t_skip "sinkdetect faults" "bin/sinkdetect or bin/sinkplant not built"; t_done; exit 0
fi
chmod 755 "$TMP"
cd "$TMP" || exit 1
"$PLANT" -o p.h5 --seed 3 2>/dev/null
size=$(stat -c %s p.h5)
sinkdetect p.h5 >det.tsv 2>/dev/null
t_ok "planted trace ($size bytes) reads" test -s det.tsv
empty() { local l; l=$(ls -A "$1" 2>&1); [ -z "$l" ] || { echo "left in $1: $l"; return 1; }; }
clean() { rm -rf "${1:?}"/* "$1"/.[!.]*; }

# --- truncated and foreign inputs -------------------------------------------
for n in 0 7 40 96 300 4096 $((size / 2)) $((size - 1)); do
	head -c $n p.h5 >cut$n.h5
	t_fails "sinkdetect: HDF5 cut to $n bytes" 1 "cut$n\.h5" sinkdetect cut$n.h5
	t_fails_in "sinkdetect -: HDF5 image cut to $n bytes on stdin" 1 "sinkdetect: " cut$n.h5 sinkdetect -
done
head -c 100000 /dev/urandom >noise.h5
t_fails "sinkdetect: random bytes" 1 "noise\.h5" sinkdetect noise.h5
printf '\x89HDF\r\n\x1a\n' >sig.h5; head -c 2000 /dev/zero >>sig.h5
t_fails "sinkdetect: HDF5 signature then zeros" 1 "sig\.h5" sinkdetect sig.h5
mkdir -p adir.h5
t_fails "sinkdetect: a directory" 1 "adir\.h5" sinkdetect adir.h5
t_fails "sinkdetect: missing file" 1 "nofile\.h5" sinkdetect nofile.h5
# the good one first, then a bad one: the message names the bad one, status 1
t_fails "sinkdetect good.h5 bad.h5: names the bad one" 1 "cut300\.h5" sinkdetect p.h5 cut300.h5
# sinklevels: truncated TSV (the last row cut after three fields)
{ head -20 det.tsv; sed -n 21p det.tsv | cut -f1-3; } >short.tsv
t_fails "sinklevels: last row cut short" 1 "short\.tsv" sinklevels short.tsv
: >empty.tsv
t_fails "sinklevels: empty input" 1 "empty\.tsv" sinklevels empty.tsv
head -c 5000 /dev/urandom >noise.tsv
t_fails "sinklevels: random bytes" 1 "noise\.tsv" sinklevels noise.tsv

# --- permission denied (as nobody) -------------------------------------------
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
	cp p.h5 locked.h5; chmod 000 locked.h5; cp det.tsv locked.tsv; chmod 000 locked.tsv
	t_fails "sinkdetect: unreadable input" 1 "locked\.h5.*[Pp]ermission denied" asnobody sinkdetect locked.h5
	t_fails "sinklevels: unreadable input" 1 "locked\.tsv.*[Pp]ermission denied" asnobody sinklevels locked.tsv
	chmod 644 p.h5; mkdir -p ro; chmod 555 ro
	t_fails "sinkdetect -o into a read-only directory" 1 "ro/out\.h5.*[Pp]ermission denied" \
		asnobody sinkdetect -o ro/out.h5 p.h5
	t_ok "read-only directory: nothing left" empty ro
else
	t_skip "permission denied cases" "need root and setpriv to run as nobody"
fi

# --- stdout --------------------------------------------------------------------
for prog in sinkdetect sinklevels; do
	in=p.h5; [ $prog = sinklevels ] && in=det.tsv
	$prog $in >/dev/full 2>full.err; rc=$?
	t_eq "$prog > /dev/full: exit 1" 1 "$rc"
	t_eq "$prog > /dev/full: one line" 1 "$(wc -l <full.err | tr -d ' ')"
	rc=$(closed_pipe $prog $in 2>pipe.err)
	t_eq "$prog | (closed pipe): ends by SIGPIPE, as a filter does" -13 "$rc"
	t_eq "$prog | (closed pipe): silent" 0 "$(wc -l <pipe.err | tr -d ' ')"
done

# --- full disk on -o -------------------------------------------------------------
D=$TMP/disk; mkdir -p "$D"
if mount -t tmpfs -o size=256k tmpfs "$D" 2>/dev/null; then
	t_fails "sinkdetect -o on a full 256k tmpfs" 1 "out\.h5.*([Nn]o space|ENOSPC|disk full)" sinkdetect -o "$D/out.h5" p.h5
	t_ok "full tmpfs: nothing left" empty "$D"
	umount "$D"
else
	t_skip "sinkdetect -o on a full tmpfs" "mount -t tmpfs not permitted here"
fi
t_fails "sinkdetect -o with RLIMIT_FSIZE 64k" 1 "out\.h5" \
	bash -c 'trap "" XFSZ; ulimit -f 64; exec "$@"' sh sinkdetect -o "$D/out.h5" p.h5
t_ok "RLIMIT_FSIZE: nothing left" empty "$D"
clean "$D"

# --- allocation failure and ENOSPC through the injector -------------------------
if [ "${SS_SANITIZE:-0}" != 1 ] && cc -shared -fPIC -O1 -o inject.so "$INJ_SRC" -ldl 2>cc.err; then
	INJ=$TMP/inject.so
	rm -f rep
	env LD_PRELOAD="$INJ" SS_INJECT_MALLOC_EXE=1 SS_INJECT_REPORT="$TMP/rep" SS_INJECT_ENOSPC_AFTER=$((1 << 40)) \
		sinkdetect -o "$D/ok.h5" p.h5 >/dev/null 2>&1
	clean "$D"
	nb=$(sed -n 's/.*big_allocs=\([0-9]*\).*/\1/p' rep | tail -1)
	nw=$(sed -n 's/.*bytes_written=\([0-9]*\).*/\1/p' rep | tail -1)
	t_ok "sinkdetect -o: allocations >= 64 KiB ($nb) and bytes written ($nw) counted" test "${nb:-0}" -gt 0 -a "${nw:-0}" -gt 0
	for n in 4096 $((nw / 2)) $((nw - 1)); do
		t_fails "sinkdetect -o: ENOSPC after $n of $nw bytes" 1 "out\.h5.*([Nn]o space|ENOSPC|disk full)" \
			env LD_PRELOAD="$INJ" SS_INJECT_ENOSPC_AFTER=$n sinkdetect -o "$D/out.h5" p.h5
		t_ok "ENOSPC after $n: nothing left" empty "$D"
		clean "$D"
	done
	for k in $(printf '%s\n' 1 2 $((nb / 2)) "$nb" | awk -v n="${nb:-0}" '$1>=1 && $1<=n' | sort -nu); do
		env LD_PRELOAD="$INJ" SS_INJECT_MALLOC_EXE=1 SS_INJECT_MALLOC_FAIL=$k sinkdetect -o "$D/out.h5" p.h5 >m.out 2>m.err
		rc=$?; nl=$(wc -l <m.err | tr -d ' ')
		if [ $rc = 0 ] && cmp -s m.out det.tsv; then t_pass "sinkdetect: allocation $k of $nb fails: coped, same output"
		elif [ $rc = 1 ] && [ "$nl" = 1 ] && [ ! -s m.out ] && empty "$D" >/dev/null; then
			t_pass "sinkdetect: allocation $k of $nb fails: exit 1, one line, nothing left"
		else t_fail "sinkdetect: allocation $k of $nb fails" "exit $rc, $nl stderr lines" "$(head -2 m.err)"; fi
		clean "$D"
	done
else
	t_skip "injector cases" "${SS_SANITIZE:+sanitizer build}$(head -1 cc.err 2>/dev/null)"
fi
t_done
