#!/usr/bin/env bash
# actdump under faults (issue 9): full disk, closed stdout, signals mid-run,
# permission denied, --max-memory, allocation failure, NaN/Inf in the forward
# pass.  The output is complete or absent, the status non-zero, the message
# one line saying what happened.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/known.inc"
MK=$SS_ROOT/tests/tools/mkmodel.py
INJ_SRC=$SS_ROOT/tests/tools/preload/inject.c

if ! have_py numpy; then t_skip "actdump faults" "python3-numpy absent"; t_done; exit 0; fi
if [ ! -x "$SS_BIN/actdump" ]; then t_skip "actdump faults" "bin/actdump not built yet"; t_done; exit 0; fi

chmod 755 "$TMP"          # the permission cases run as nobody
$PY "$MK" --layers 4 "$TMP/m"
$PY -c "import numpy as np; r=np.random.default_rng(3); print(' '.join(map(str, [1]+list(r.integers(0,256,383)))))" >"$TMP/ids"
ACTS=resid,attn_out,mlp_in,mlp_out
actdump -m "$TMP/m" --ids "$TMP/ids" -o "$TMP/full.h5" --acts $ACTS 2>/dev/null
size=$(stat -c %s "$TMP/full.h5" 2>/dev/null || echo 0)
t_ok "reference run writes the file ($size bytes)" test "$size" -gt 100000

# empty DIR: nothing at all left there (no output, no .NAME.tmp.XXXXXX)
empty() { local l; l=$(ls -A "$1" 2>&1); [ -z "$l" ] || { echo "left in $1: $l"; return 1; }; }

# --- full disk -------------------------------------------------------------
# (a) a tmpfs smaller than the output, when mount works (root, not in every
#     container); (b) RLIMIT_FSIZE (EFBIG; SIGXFSZ ignored), always; (c) the
#     write(2)/pwrite(2) injector (ENOSPC after N bytes) at several N.
D=$TMP/disk; mkdir -p "$D"
# (sanitizer build: libhdf5's buffers after its failed close are not ours)
export LSAN_OPTIONS=suppressions=$SS_ROOT/tests/fault/lsan_hdf5.supp:print_suppressions=0
if mount -t tmpfs -o size=128k tmpfs "$D" 2>/dev/null; then
	t_fails "full disk (128k tmpfs): exit 1, one line" 1 "out\.h5.*([Nn]o space|ENOSPC)" \
		actdump -m "$TMP/m" --ids "$TMP/ids" -o "$D/out.h5" --acts $ACTS
	t_ok "full disk (tmpfs): nothing left" empty "$D"
	umount "$D"
else
	t_skip "full disk (tmpfs)" "mount -t tmpfs not permitted here"
	t_skip "full disk (tmpfs): nothing left" "mount -t tmpfs not permitted here"
fi
fsz() { (trap '' XFSZ; ulimit -f 64; exec "$@"); }   # 64 blocks of 1024 bytes
t_fails "file size limit (RLIMIT_FSIZE 64k): exit 1, one line" 1 "out\.h5.*(too large|EFBIG|[Nn]o space|write)" \
	fsz actdump -m "$TMP/m" --ids "$TMP/ids" -o "$D/out.h5" --acts $ACTS
t_ok "file size limit: nothing left" empty "$D"
rm -rf "${D:?}"/* "$D"/.[!.]*
INJ=
if [ "${SS_SANITIZE:-0}" != 1 ] && cc -shared -fPIC -O1 -o "$TMP/inject.so" "$INJ_SRC" -ldl 2>"$TMP/cc.err"; then
	INJ=$TMP/inject.so
fi
if [ -n "$INJ" ]; then
	# N from the bytes a good run writes (HDF5 leaves holes, so that can be
	# less than the file size).
	rm -f "$TMP/rep"
	env LD_PRELOAD="$INJ" SS_INJECT_ENOSPC_AFTER=$((1 << 40)) SS_INJECT_MALLOC_EXE=1 SS_INJECT_REPORT="$TMP/rep" \
		actdump -m "$TMP/m" --ids "$TMP/ids" -o "$D/out.h5" --acts $ACTS 2>/dev/null
	rm -f "$D/out.h5"
	nw=$(sed -n 's/.*bytes_written=\([0-9]*\).*/\1/p' "$TMP/rep" | tail -1)
	t_ok "bytes written by write/pwrite counted (${nw:-none})" test "${nw:-0}" -gt 0
	for n in 0 4096 $((nw / 2)) $((nw - 1)); do
		t_fails "ENOSPC injected after $n of $nw bytes: exit 1, one line" 1 "out\.h5.*([Nn]o space|ENOSPC|disk full)" \
			env LD_PRELOAD="$INJ" SS_INJECT_ENOSPC_AFTER=$n actdump -m "$TMP/m" --ids "$TMP/ids" -o "$D/out.h5" --acts $ACTS
		t_ok "ENOSPC after $n bytes: nothing left" empty "$D"
		rm -rf "${D:?}"/* "$D"/.[!.]*
	done
else
	t_skip "ENOSPC injector" "${SS_SANITIZE:+sanitizer build (LD_PRELOAD conflicts with ASan)}$(head -1 "$TMP/cc.err" 2>/dev/null)"
fi

unset LSAN_OPTIONS

# --- stdout ------------------------------------------------------------------
actdump -m "$TMP/m" --ids "$TMP/ids" >/dev/full 2>"$TMP/full.err"
rc=$?
t_eq "stdout is /dev/full: exit status 1" 1 "$rc"
t_match "stdout is /dev/full: message" "([Nn]o space|ENOSPC|stdout|write)" "$(cat "$TMP/full.err")"
t_eq "stdout is /dev/full: one line" 1 "$(wc -l <"$TMP/full.err" | tr -d ' ')"
# A reader that closed the pipe before the image is written: silent, ended
# by SIGPIPE as a filter is (after the whole run: EPIPE on the image).
rc=$(closed_pipe actdump -m "$TMP/m" --ids "$TMP/ids" --acts $ACTS 2>"$TMP/pipe.err")
t_eq "closed stdout pipe: ends by SIGPIPE" -13 "$rc"
t_eq "closed stdout pipe: silent" 0 "$(wc -l <"$TMP/pipe.err" | tr -d ' ')"

# --- signals mid-run ---------------------------------------------------------
# A model big enough that the run takes a while.  Each signal is sent twice:
# early (0.3 s in: loading or computing) and once the temporary output has
# grown past 1 MB (writing).  Expected: killed by that signal (status 128+N,
# as ofile.h re-raises), a message, neither output nor temporary.  The
# program runs in the background with default dispositions (a background
# job of a non-interactive shell would otherwise ignore SIGINT).
$PY "$MK" --layers 8 --hidden 256 --inter 768 --heads 8 --kv-heads 4 --vocab 512 "$TMP/big"
$PY -c "import numpy as np; r=np.random.default_rng(4); print(' '.join(map(str, [1]+list(r.integers(0,512,1535)))))" >"$TMP/ids-big"
S=$TMP/sig; mkdir -p "$S"
big() { find "$S" -name '.out.h5.tmp.*' -size +1M 2>/dev/null | grep -q .; }
for sig in INT TERM; do
	for when in early writing; do
		rm -rf "${S:?}"/* "$S"/.[!.]*
		env --default-signal=INT,TERM actdump -m "$TMP/big" --ids "$TMP/ids-big" -o "$S/out.h5" \
			--acts $ACTS 2>"$TMP/sig.err" &
		pid=$!
		if [ $when = early ]; then sleep 0.3; else
			for _ in $(seq 600); do big && break; kill -0 $pid 2>/dev/null || break; sleep 0.01; done
		fi
		kill -$sig $pid 2>/dev/null
		wait $pid; rc=$?
		want=$((128 + $(kill -l $sig)))
		if [ $rc = 0 ]; then
			t_skip "SIG$sig while $when" "the run ended before the signal"
			continue
		fi
		t_eq "SIG$sig while $when: status $want" "$want" "$rc"
		t_ok "SIG$sig while $when: no output, no temporary" empty "$S"
		t_match "SIG$sig while $when: message" "(interrupt|SIG$sig|signal|terminat)" "$(cat "$TMP/sig.err")"
	done
done

# --- a model file cut short while actdump runs --------------------------------
# The weights are memory-mapped: truncating the file in place makes the next
# read of a later layer fault (SIGBUS).  Expected: exit 1 with a message
# naming the file, no output or temporary; not a crash.
cp -r "$TMP/big" "$TMP/shrink"
S=$TMP/shr; mkdir -p "$S"
actdump -m "$TMP/shrink" --ids "$TMP/ids-big" -o "$S/out.h5" -t 1 2>"$TMP/shr.err" &
pid=$!
sleep 0.3
st=$TMP/shrink/model.safetensors
truncate -s $(($(stat -c %s "$st") / 3)) "$st"
wait $pid; rc=$?
if [ $rc = 0 ]; then t_skip "model file truncated mid-run" "the run ended before the truncation"
else
	t_eq "model file truncated mid-run: exit 1 (not SIGBUS, 135)" 1 "$rc"
	t_match "model file truncated mid-run: message names the file" "model\.safetensors" "$(cat "$TMP/shr.err")"
	t_ok "model file truncated mid-run: no output, no temporary" empty "$S"
fi

# --- permission denied (as nobody; root ignores permissions) ------------------
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	asnobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
	cp -r "$TMP/m" "$TMP/perm"; chmod -R a+rX "$TMP/perm" "$TMP/ids"
	chmod 000 "$TMP/perm/model.safetensors"
	mkdir -p "$TMP/po"; chmod 777 "$TMP/po"
	t_fails "unreadable model.safetensors" 1 "model\.safetensors.*[Pp]ermission denied" \
		asnobody actdump -m "$TMP/perm" --ids "$TMP/ids" -o "$TMP/po/out.h5"
	chmod 644 "$TMP/perm/model.safetensors"; chmod 000 "$TMP/perm/config.json"
	t_fails "unreadable config.json" 1 "config\.json.*[Pp]ermission denied" \
		asnobody actdump -m "$TMP/perm" --ids "$TMP/ids" -o "$TMP/po/out.h5"
	chmod 644 "$TMP/perm/config.json"; chmod 000 "$TMP/ids"
	t_fails "unreadable ids file" 1 "ids.*[Pp]ermission denied" \
		asnobody actdump -m "$TMP/perm" --ids "$TMP/ids" -o "$TMP/po/out.h5"
	chmod 644 "$TMP/ids"; mkdir -p "$TMP/ro"; chmod 555 "$TMP/ro"
	t_fails "output directory not writable" 1 "ro/.*[Pp]ermission denied" \
		asnobody actdump -m "$TMP/perm" --ids "$TMP/ids" -o "$TMP/ro/out.h5"
	t_ok "permission cases: nothing left" empty "$TMP/po"
else
	t_skip "permission denied cases" "need root and setpriv to run as nobody"
fi

# --- resources ---------------------------------------------------------------
t_fails "--max-memory 1M refused up front" 1 "([Mm]emory|max-memory)" \
	actdump -m "$TMP/big" --ids "$TMP/ids-big" -o "$D/out.h5" --max-memory 1M
t_ok "--max-memory: nothing left" empty "$D"
rm -rf "${D:?}"/* "$D"/.[!.]*
t_ok "--max-memory 8G is enough" actdump -m "$TMP/m" --ids "$TMP/ids" -o "$D/ok.h5" --max-memory 8G
rm -f "$D/ok.h5"
if [ -n "$INJ" ]; then
	# Count the allocations of >= 64 KiB that sinkscope's own code makes in a
	# good run, then fail each of a spread of them in turn: a clean message
	# each time, never a crash.  (Failing libhdf5's own allocations corrupts
	# its heap: a libhdf5 bug, not tested here.)
	rm -f "$TMP/rep"
	env LD_PRELOAD="$INJ" SS_INJECT_MALLOC_EXE=1 SS_INJECT_REPORT="$TMP/rep" actdump -m "$TMP/m" --ids "$TMP/ids" -o "$D/ok.h5" --acts $ACTS 2>/dev/null
	rm -f "$D/ok.h5"
	nb=$(sed -n 's/.*big_allocs=\([0-9]*\).*/\1/p' "$TMP/rep" | tail -1)
	t_ok "allocations of >= 64 KiB counted ($nb)" test "${nb:-0}" -gt 0
	ks=$(printf '%s\n' 1 2 3 $((nb / 4)) $((nb / 2)) $((nb - 1)) "$nb" | awk -v n="${nb:-0}" '$1>=1 && $1<=n' | sort -nu)
	# Either the program copes (exit 0, complete file) or it says so
	# (exit 1, one line, no file); never a crash.
	for k in $ks; do
		rm -rf "${D:?}"/* "$D"/.[!.]*
		env LD_PRELOAD="$INJ" SS_INJECT_MALLOC_EXE=1 SS_INJECT_MALLOC_FAIL=$k actdump -m "$TMP/m" --ids "$TMP/ids" -o "$D/out.h5" \
			--acts $ACTS >"$TMP/m.out" 2>"$TMP/m.err"
		rc=$?
		nl=$(wc -l <"$TMP/m.err" | tr -d ' ')
		if [ $rc = 0 ] && [ "$(stat -c %s "$D/out.h5" 2>/dev/null)" = "$size" ]; then
			t_pass "allocation $k of $nb fails: coped (exit 0, complete file)"
		elif [ $rc = 1 ] && [ "$nl" = 1 ] && grep -qE '([Mm]emory|alloc|ENOMEM)' "$TMP/m.err" && empty "$D" >/dev/null; then
			t_pass "allocation $k of $nb fails: exit 1, one line, nothing left"
		else
			t_fail "allocation $k of $nb fails" "exit $rc, $nl stderr lines, left: $(ls -A "$D")" "$(head -2 "$TMP/m.err")"
		fi
	done
	rm -rf "${D:?}"/* "$D"/.[!.]*
fi

# T beyond max_position_embeddings (128 here, T = 384): refused or warned,
# as the user chooses with --positions.
$PY "$MK" --max-pos 128 "$TMP/short"
t_fails "--positions refuse: T > max_position_embeddings refused" 1 "max_position_embeddings|128" \
	actdump -m "$TMP/short" --ids "$TMP/ids" -o "$D/out.h5" --positions refuse
t_ok "--positions refuse: nothing left" empty "$D"
actdump -m "$TMP/short" --ids "$TMP/ids" -o "$D/w.h5" --positions warn 2>"$TMP/w.err"; rc=$?
t_eq "--positions warn: runs (exit 0)" 0 "$rc"
t_match "--positions warn: says so on stderr" "max_position_embeddings|128" "$(cat "$TMP/w.err")"
t_ok "--positions warn: output written" test -s "$D/w.h5"
rm -rf "${D:?}"/* "$D"/.[!.]*

# --- numbers: NaN/Inf -------------------------------------------------------
# f16 model whose layer-2 down_proj holds a weight that overflowed f16 (inf):
# the MLP output of layer 2 (1-based) is the first non-finite activation.
$PY "$MK" --dtype f16 --plant-inf 1 "$TMP/inf"
t_fails "f16 overflow at layer 2: detected and reported with its layer" 1 "([Ll]ayer 2\b|layers\.1\.mlp\.down_proj)" \
	actdump -m "$TMP/inf" --ids "$TMP/ids" -o "$D/out.h5"
t_ok "non-finite: nothing left" empty "$D"
t_done
