#!/usr/bin/env bash
# libgomp's wait (util/pool.c): the programs that run the forward pass give
# libgomp GOMP_SPINCOUNT=10000 when the user sets neither OMP_WAIT_POLICY
# nor GOMP_SPINCOUNT (libgomp's own default is 300000 rounds, about 4.5 ms
# of spinning per wait); a user's setting is left alone.  libgomp prints
# what it took under OMP_DISPLAY_ENV=verbose.
. "$(dirname "$0")/../lib.sh"
for p in actdump kvevict pcaprobe swapexp; do [ -x "$SS_BIN/$p" ] || { t_skip "omp_wait" "$p not built"; t_done; exit 0; }; done
spin() { OMP_DISPLAY_ENV=verbose "$@" 2>&1 | sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p"; }
for p in actdump kvevict pcaprobe swapexp; do
	t_eq "$p: libgomp spins 10000 rounds by default" 10000 "$(spin "$p" --version)"
done
t_eq "a bare environment with one lendable entry (PWD)" 10000 "$(env -i PWD=/ OMP_DISPLAY_ENV=verbose "$SS_BIN/actdump" --version 2>&1 | sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p")"
t_eq "the user's GOMP_SPINCOUNT=77 is kept" 77 "$(spin env GOMP_SPINCOUNT=77 actdump --version)"
t_eq "the user's OMP_WAIT_POLICY=active is kept (libgomp: 3e10 rounds)" 30000000000 "$(spin env OMP_WAIT_POLICY=active actdump --version)"
t_done
