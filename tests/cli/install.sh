#!/usr/bin/env bash
# make install (DESTDIR, PREFIX): the programs, the man pages, and the data
# mkorganism needs by default, so that an installed mkorganism with no SPEC
# builds the shipped organism from any working directory (the same weights
# as the source tree's), and make uninstall removes all of it.
. "$(dirname "$0")/../lib.sh"
[ -x "$SS_BIN/mkorganism" ] || { t_skip "install" "mkorganism not built"; t_done; exit 0; }
D=$TMP/dest
t_ok "make install DESTDIR PREFIX=/usr" make -s -C "$SS_ROOT" install DESTDIR="$D" PREFIX=/usr BINDIR="$SS_BIN" BUILD="$SS_BUILD"
t_eq "every program installed" "$(ls "$SS_BIN")" "$(ls "$D/usr/bin")"
t_ok "man pages installed (sinkscope(7), sinkplant(1))" test -f "$D/usr/share/man/man7/sinkscope.7" -a -f "$D/usr/share/man/man1/sinkplant.1"
cd / || exit 1
"$D/usr/bin/mkorganism" -o "$TMP/inst-org" 2>"$TMP/err"; rc=$?
t_eq "installed mkorganism, no SPEC, from /: exit 0" "0 " "$rc $(cat "$TMP/err")"
(cd "$SS_ROOT" && "$SS_BIN/mkorganism" -o "$TMP/tree-org" examples/organism.yaml) >/dev/null 2>&1
t_ok "the same organism as examples/organism.yaml builds" cmp "$TMP/inst-org/model.safetensors" "$TMP/tree-org/model.safetensors"
t_ok "make uninstall" make -s -C "$SS_ROOT" uninstall DESTDIR="$D" PREFIX=/usr
t_eq "nothing left but empty folders" "" "$(find "$D" -type f)"
t_done
