#!/usr/bin/env bash
# -o never replaces what it must not (util/ofile.h, sinkscope(7) OUTPUTS):
# for every output option of every program (actdump -o and --text-out,
# sinkdetect -o, pcaprobe -o, swapexp -o, tsne -o; mkorganism -o DIR),
#   - a new file and an existing regular file get the finished output (the
#     same as a run into a fresh file; a replaced file keeps its mode);
#   - a character device (a null and a full device made with mknod as root,
#     so that a regression cannot turn the machine's /dev/null into a file;
#     /dev/null and /dev/full otherwise) stays a device; the full one gives
#     exit 1 and one line;
#   - a FIFO and a Unix socket stay what they are and their reader gets the
#     whole output; so does a pipe named as /dev/fd/N;
#   - a symlink stays a link, its target gets the output (a dangling link
#     creates its target);
#   - a directory: exit 1, one line, left as it was;
#   - -o naming one of the program's inputs: the output, as from a separate
#     file.
# HDF5 outputs are compared dataset by dataset and attribute by attribute
# (h5py), except the root attribute "command", which holds the -o path.
. "$(dirname "$0")/../lib.sh"
for p in mkorganism actdump sinkdetect pcaprobe swapexp tsne; do
	[ -x "$SS_BIN/$p" ] || { t_skip "outputs" "$p not built"; t_done; exit 0; }
done
have_py h5py || { t_skip "outputs" "python3-h5py absent"; t_done; exit 0; }
cd "$TMP" || exit 1
mkorganism -o org "$SS_ROOT/examples/organism.yaml" >/dev/null 2>&1
head -n 1 "$SS_ROOT/examples/traces/deepseek-r1-distill-qwen-14b-math.jsonl" | jq -j '.response[:600]' >text.txt
printf 'The answer is' >short.txt
actdump -m org --text text.txt --acts resid,mlp_in -o t.h5 2>/dev/null
sinkdetect t.h5 >eps.tsv 2>/dev/null
LS=$(awk -F'\t' 'NR == 2 { print $2 }' org/truth/decision.tsv)
t_ok "inputs: organism trace and episodes" test -s t.h5 -a -s eps.tsv -a -n "$LS"

# run PROG OUT [INPUT-DIR]: the program with its output at OUT
run() {
	local p=$1 o=$2 d=${3:-.}
	case $p in
	actdump) actdump -m org --text "$d/text.txt" -o "$o" ;;
	actdump-text-out) actdump -m org --text "$d/short.txt" --generate 3 --text-out "$o" -o "$d/gen.h5" ;;
	sinkdetect) sinkdetect -o "$o" "$d/t.h5" >/dev/null ;;
	pcaprobe) pcaprobe -m org --layer "$LS" --n-components 2 -o "$o" "$d/t.h5" "$d/eps.tsv" ;;
	swapexp) swapexp -m org -w 2 -o "$o" "$d/t.h5" "$d/eps.tsv" ;;
	tsne) tsne --layer "$LS" --iter 100 --exag-iter 50 -q -o "$o" "$d/t.h5:/acts/resid" ;;
	esac
}
kind() { case $1 in actdump | sinkdetect | tsne) echo h5 ;; *) echo text ;; esac; }
# same KIND A B: the same output (HDF5: every dataset and attribute but /command)
same() {
	if [ "$1" = text ]; then cmp -s "$2" "$3"; return; fi
	$PY - "$2" "$3" <<'PY'
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
def items(f):
    out = {}
    f.visititems(lambda n, o: out.__setitem__(n, o[()] if isinstance(o, h5py.Dataset) else None))
    return out
def attrs(f):
    out = {("/", k): v for k, v in f.attrs.items() if k != "command"}
    f.visititems(lambda n, o: out.update({(n, k): v for k, v in o.attrs.items()}))
    return out
def eq(x, y):
    return x is None and y is None or np.array_equal(np.asarray(x), np.asarray(y))
ia, ib, aa, ab = items(a), items(b), attrs(a), attrs(b)
ok = ia.keys() == ib.keys() and aa.keys() == ab.keys() and all(eq(ia[k], ib[k]) for k in ia) \
    and all(eq(aa[k], ab[k]) for k in aa)
sys.exit(0 if ok else 1)
PY
}
# one stderr line naming WHAT, exit STATUS: check ST ERRFILE RC WHAT DESC
one_line() { local want=$1 rc=$2 err=$3 re=$4 d=$5
	if [ "$rc" -eq "$want" ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -qE -- "$re" "$err"; then t_pass "$d"
	else t_fail "$d" "exit $rc (want $want)" "$(cat "$err")"; fi; }
# socket PATH DEST: a Unix socket at PATH whose listener copies one stream to DEST
socket_listen() {
	rm -f "$1" "$2"
	$PY -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(1); s.settimeout(20)
c, _ = s.accept(); out = open(sys.argv[2] + ".part", "wb")
while True:
    b = c.recv(1 << 16)
    if not b: break
    out.write(b)
out.close()
import os; os.rename(sys.argv[2] + ".part", sys.argv[2])' "$1" "$2" &
	for _ in $(seq 100); do [ -S "$1" ] && return; sleep 0.05; done
}
leftovers() { ls -A "$1" | grep -E '\.tmp\.' || true; }

if [ "$(id -u)" = 0 ]; then
	mknod nulldev c 1 3 && mknod fulldev c 1 7
	NUL=$TMP/nulldev FUL=$TMP/fulldev
else
	NUL=/dev/null FUL=/dev/full # not writable by this user: /dev stays intact
fi

for p in actdump actdump-text-out sinkdetect pcaprobe swapexp tsne; do
	k=$(kind "$p")
	mkdir -p "$p" && rm -rf "${p:?}"/*
	run "$p" "$p/ref" 2>"$p/ref.err"
	t_ok "$p: a new file is written" test -s "$p/ref"
	# an existing regular file, mode 600: replaced, mode kept
	echo junk >"$p/old" && chmod 600 "$p/old"
	run "$p" "$p/old" 2>/dev/null
	if same "$k" "$p/ref" "$p/old" && [ "$(stat -c %a "$p/old")" = 600 ]; then t_pass "$p: an existing file is replaced, mode kept"
	else t_fail "$p: an existing file is replaced, mode kept" "mode $(stat -c %a "$p/old")"; fi
	# character devices
	run "$p" "$NUL" 2>"$p/null.err"; rc=$?
	if [ $rc -eq 0 ] && [ -c "$NUL" ]; then t_pass "$p: -o a null device: exit 0, still a device"
	else t_fail "$p: -o a null device: exit 0, still a device" "exit $rc; $(ls -l "$NUL")" "$(cat "$p/null.err")"; fi
	run "$p" "$FUL" 2>"$p/full.err"; rc=$?
	one_line 1 $rc "$p/full.err" "$(basename "$FUL"): write error: No space left" "$p: -o a full device: exit 1, one line"
	t_ok "$p: -o a full device: still a device" test -c "$FUL"
	# FIFO
	mkfifo "$p/fifo"
	cat "$p/fifo" >"$p/fromfifo" &
	reader=$!
	run "$p" "$p/fifo" 2>/dev/null; rc=$?
	[ -p "$p/fifo" ] || kill $reader 2>/dev/null # replaced: no writer will come
	wait $reader
	if [ $rc -eq 0 ] && [ -p "$p/fifo" ] && same "$k" "$p/ref" "$p/fromfifo"; then t_pass "$p: -o a FIFO: its reader gets the output, still a FIFO"
	else t_fail "$p: -o a FIFO: its reader gets the output, still a FIFO" "exit $rc; $(ls -l "$p/fifo")"; fi
	# /dev/fd/3 on a pipe: a link to "pipe:[N]", no path, opened all the
	# same (as -o /dev/stdout in a pipeline)
	{ run "$p" /dev/fd/3 3>&1 >/dev/null 2>"$p/fd.err"; echo $? >"$p/fd.rc"; } | cat >"$p/fromfd"
	if [ "$(cat "$p/fd.rc")" = 0 ] && same "$k" "$p/ref" "$p/fromfd"; then t_pass "$p: -o /dev/fd/N on a pipe: the reader gets the output"
	else t_fail "$p: -o /dev/fd/N on a pipe: the reader gets the output" "exit $(cat "$p/fd.rc")" "$(cat "$p/fd.err")"; fi
	# Unix socket
	socket_listen "$p/sock" "$p/fromsock"
	listener=$!
	run "$p" "$p/sock" 2>"$p/sock.err"; rc=$?
	[ -S "$p/sock" ] || kill $listener 2>/dev/null
	wait $listener
	if [ $rc -eq 0 ] && [ -S "$p/sock" ] && [ -f "$p/fromsock" ] && same "$k" "$p/ref" "$p/fromsock"; then t_pass "$p: -o a socket: its listener gets the output"
	else t_fail "$p: -o a socket: its listener gets the output" "exit $rc; $(cat "$p/sock.err")"; fi
	# symlinks: to an existing file (relative target), dangling
	echo junk >"$p/target" && ln -s target "$p/link"
	run "$p" "$p/link" 2>/dev/null; rc=$?
	if [ $rc -eq 0 ] && [ -L "$p/link" ] && same "$k" "$p/ref" "$p/target"; then t_pass "$p: -o a symlink: still a link, its target gets the output"
	else t_fail "$p: -o a symlink: still a link, its target gets the output" "exit $rc; $(ls -l "$p/link")"; fi
	mkdir -p "$p/sub" && ln -s sub/new "$p/dangling"
	run "$p" "$p/dangling" 2>/dev/null; rc=$?
	if [ $rc -eq 0 ] && [ -L "$p/dangling" ] && same "$k" "$p/ref" "$p/sub/new"; then t_pass "$p: -o a dangling symlink: its target is created"
	else t_fail "$p: -o a dangling symlink: its target is created" "exit $rc; $(ls -lR "$p/sub")"; fi
	# a directory
	mkdir -p "$p/dir"
	run "$p" "$p/dir" 2>"$p/dir.err" >/dev/null; rc=$?
	one_line 1 $rc "$p/dir.err" "$p/dir: is a directory" "$p: -o a directory: exit 1, one line"
	t_eq "$p: -o a directory: left empty" "" "$(ls -A "$p/dir")"
	ln -s dir "$p/dirlink"
	run "$p" "$p/dirlink" 2>"$p/dirlink.err" >/dev/null; rc=$?
	one_line 1 $rc "$p/dirlink.err" "dirlink: a symbolic link to the directory" "$p: -o a symlink to a directory: exit 1, one line"
	t_eq "$p: no temporary file left" "" "$(leftovers "$p")$(leftovers "$p/sub")$(leftovers "$p/dir")"
done

# -o naming an input: the output, as from a separate file
for p in actdump sinkdetect pcaprobe swapexp tsne; do
	k=$(kind "$p")
	mkdir -p "$p/in" && cp text.txt short.txt t.h5 eps.tsv "$p/in/"
	case $p in actdump) in=text.txt ;; pcaprobe | swapexp) in=eps.tsv ;; *) in=t.h5 ;; esac
	run "$p" "$p/in/$in" "$p/in" 2>"$p/in.err"; rc=$?
	if [ $rc -eq 0 ] && same "$k" "$p/ref" "$p/in/$in"; then t_pass "$p: -o naming its input $in: the same output"
	else t_fail "$p: -o naming its input $in: the same output" "exit $rc; $(cat "$p/in.err")"; fi
done
mkdir -p atx && cp short.txt atx/
run actdump-text-out atx/short.txt atx 2>atx.err; rc=$?
if [ $rc -eq 0 ] && cmp -s actdump-text-out/ref atx/short.txt; then t_pass "actdump --text-out naming its --text input: the same continuation"
else t_fail "actdump --text-out naming its --text input: the same continuation" "exit $rc; $(cat atx.err)"; fi

# two outputs of one run naming one file (through ./, a symlink, a hard
# link, stdout twice): a usage error naming both options, before any input
# is read (the inputs here do not exist), nothing written
mkdir -p two && cd two && touch hard && ln hard hard2 && ln -s o.x link
twice() { local want=$1 d=$2; shift 2
	"$@" >out 2>err; rc=$?
	if [ $rc -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -qE -- "$want" err && [ ! -s out ] && [ ! -e o.x ] &&
		[ -z "$(leftovers .)" ]; then t_pass "$d"
	else t_fail "$d" "exit $rc (want 2)" "$(cat err)"; fi; }
twice '^actdump: --text-out: the same file as -o \(o\.x\)$' "actdump --text-out ./X -o X: exit 2" \
	actdump -m none --text none.txt --generate 3 -o o.x --text-out ./o.x
twice '^actdump: --text-out: the same file as -o \(stdout\)$' "actdump --text-out - (HDF5 on stdout too): exit 2" \
	actdump -m none --text none.txt --generate 3 --text-out -
twice '^kvevict: --per-layer: the same file as -o \(link\)$' "kvevict -o LINK --per-layer TARGET: exit 2" \
	kvevict -m none --ids none -o link --per-layer "$PWD/o.x"
twice '^kvevict: --masks: the same file as --per-layer \(hard\)$' "kvevict --per-layer X --masks HARDLINK-TO-X: exit 2" \
	kvevict -m none --ids none --per-layer hard --masks hard2
twice '^kvevict: --masks: the same file as -o \(stdout\)$' "kvevict --masks - (the totals on stdout): exit 2" \
	kvevict -m none --ids none --masks -
twice '^sinkplant: --truth: the same file as -o \(o\.x\)$' "sinkplant -o X --truth ../DIR/X: exit 2" \
	sinkplant -o o.x --truth "../two/o.x"
twice '^sinkplant: --truth: the same file as -o \(stdout\)$' "sinkplant -o - --truth -: exit 2" sinkplant -o - --truth -
# -o naming stdout by another name (/dev/stdout, /dev/fd/1,
# /proc/self/fd/1, the file stdout is redirected to) where a table goes
# to stdout: the same usage error (sinkdetect wrote HDF5 into its table)
for o in /dev/stdout /dev/fd/1 /proc/self/fd/1 out; do
	twice "^sinkdetect: -o $o: is stdout, which carries the table; name a file$" \
		"sinkdetect -o $o (the table on stdout): exit 2" sinkdetect -o $o none.h5
done
twice '^kvevict: --masks: /dev/stdout is stdout, the same file as -o \(stdout\)$' \
	"kvevict --masks /dev/stdout (the totals on stdout): exit 2" kvevict -m none --ids none --masks /dev/stdout
twice '^kvevict: --per-layer: /dev/fd/1 is stdout, the same file as -o \(/proc/self/fd/1\)$' \
	"kvevict -o /proc/self/fd/1 --per-layer /dev/fd/1: exit 2" kvevict -m none --ids none -o /proc/self/fd/1 --per-layer /dev/fd/1
twice '^actdump: --text-out: /dev/stdout is stdout, the same file as -o \(stdout\)$' \
	"actdump --text-out /dev/stdout (HDF5 on stdout too): exit 2" actdump -m none --text none.txt --generate 3 --text-out /dev/stdout
twice '^sinkplant: --truth: /dev/stdout is stdout, the same file as -o \(stdout\)$' \
	"sinkplant -o - --truth /dev/stdout: exit 2" sinkplant -o - --truth /dev/stdout
# ... and legal where nothing else goes to stdout: a pipe to the next program
sinkplant --n-layers 4 --tokens 32 --heads 2 --levels 2:2 --per-level 3 --distractors 1 -o /dev/stdout 2>err | cat >piped.h5
rcs="${PIPESTATUS[*]}"
if [ "$rcs" = "0 0" ] && sinkdetect piped.h5 >piped.tsv 2>>err; then t_pass "sinkplant -o /dev/stdout | cat: a trace sinkdetect reads"
else t_fail "sinkplant -o /dev/stdout | cat: a trace sinkdetect reads" "exit $rcs" "$(cat err)"; fi
rm -f piped.h5 piped.tsv err
# an empty path (an unset shell variable): a usage error naming the
# option, before any input is read (it ran to the end, then 'cannot rename')
twice '^actdump: -o: an empty path' "actdump -o '': exit 2" actdump -m none --text none.txt -o ''
twice '^actdump: --text-out: an empty path' "actdump --text-out '': exit 2" actdump -m none --text none.txt --generate 3 -o o.h5 --text-out ''
twice '^sinkdetect: -o: an empty path' "sinkdetect -o '': exit 2" sinkdetect -o '' none.h5
twice '^pcaprobe: -o: an empty path' "pcaprobe -o '': exit 2" pcaprobe -m none -o '' none.h5 none.tsv
twice '^swapexp: -o: an empty path' "swapexp -o '': exit 2" swapexp -m none -o '' none.h5 none.tsv
twice '^tsne: -o: an empty path' "tsne -o '': exit 2" tsne --layer 1 -o '' none.h5:/acts/resid
twice '^kvevict: --masks: an empty path' "kvevict --masks '': exit 2" kvevict -m none --ids none --masks ''
twice '^sinkplant: --truth: an empty path' "sinkplant --truth '': exit 2" sinkplant -o o.h5 --truth ''
twice '^mkorganism: -o: an empty path' "mkorganism -o '': exit 2" mkorganism -o '' none.yaml
cd ..

# mkorganism -o DIR: a folder; a symlink to one is followed, anything but a
# folder is refused, the path left as it was
mkorganism -o mk-ref "$SS_ROOT/examples/organism.yaml" >/dev/null 2>&1
mkdir -p mk && mkorganism -o mk/real "$SS_ROOT/examples/organism.yaml" >/dev/null 2>&1 && ln -s real mk/link
mkorganism -o mk/link "$SS_ROOT/examples/organism.yaml" 2>mk.err; rc=$?
if [ $rc -eq 0 ] && [ -L mk/link ] && cmp -s mk-ref/model.safetensors mk/real/model.safetensors; then
	t_pass "mkorganism -o a symlink to an organism: still a link, the folder rebuilt"
else t_fail "mkorganism -o a symlink to an organism: still a link, the folder rebuilt" "exit $rc; $(ls -l mk; cat mk.err)"; fi
t_eq "mkorganism: the folder's mode is 0777 less the umask" "$(printf '%o' $((0777 & ~$(umask))))" "$(stat -c %a mk-ref)"
run_mk() { mkorganism -o "$1" "$SS_ROOT/examples/organism.yaml"; }
run_mk "$NUL" >/dev/null 2>mk.err; rc=$?
one_line 1 $rc mk.err "$(basename "$NUL"): exists and is not an organism folder" "mkorganism -o a device: exit 1, one line"
t_ok "mkorganism -o a device: still a device" test -c "$NUL"
mkfifo mk/fifo
run_mk mk/fifo >/dev/null 2>mk.err; rc=$?
one_line 1 $rc mk.err "fifo: exists and is not an organism folder" "mkorganism -o a FIFO: exit 1, one line"
t_ok "mkorganism -o a FIFO: still a FIFO" test -p mk/fifo
# DIR/ as a shell completes it: the folder itself (it was rebuilt inside
# itself, "Invalid argument"), new or existing
run_mk mk/real/ >/dev/null 2>mk.err; rc=$?
if [ $rc -eq 0 ] && cmp -s mk-ref/model.safetensors mk/real/model.safetensors && [ -z "$(ls -A mk/real | grep -E '\.(tmp|old)\.')" ]; then
	t_pass "mkorganism -o EXISTING/: the folder rebuilt"
else t_fail "mkorganism -o EXISTING/: the folder rebuilt" "exit $rc; $(cat mk.err)"; fi
run_mk mk/new// >/dev/null 2>mk.err; rc=$?
if [ $rc -eq 0 ] && cmp -s mk-ref/model.safetensors mk/new/model.safetensors; then t_pass "mkorganism -o NEW//: the folder made"
else t_fail "mkorganism -o NEW//: the folder made" "exit $rc; $(cat mk.err)"; fi
ln -s nowhere/org mk/dangling
run_mk mk/dangling >/dev/null 2>mk.err; rc=$?
one_line 1 $rc mk.err "^mkorganism: mk/nowhere/org: cannot create the folder: No such file or directory$" \
	"mkorganism -o a link into a missing folder: one line naming the folder, not a temporary name"
t_eq "mkorganism: no temporary folder left" "" "$(ls -A mk | grep -E '\.(tmp|old)\.' || true)"
t_done
