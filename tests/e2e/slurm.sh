#!/usr/bin/env bash
# The pipeline on a real Slurm (Debian's slurm-wlm and munge): munged,
# slurmctld and slurmd started here on localhost with a configuration in
# the test's temporary folder (their own ports, sockets, spool and state),
# then the study of the model organism run three ways: locally, with
# SLURM=1 (every per-trace recipe an srun job step, bin/srun-shell) and as
# a job array (slurm/array.sh: sbatch --array, then the dependent report
# job).  Both Slurm runs must give the local run's report.md, episode
# tables and levels byte for byte.  The daemons are stopped at the end.
# Skipped, with one line, only where the daemons cannot start (not root,
# packages absent, no munge key possible).
. "$(dirname "$0")/../lib.sh"
PL=$SS_ROOT/pipelines
t0=$(date +%s)
skip() { t_skip "real Slurm" "$1"; t_done; exit 0; }
for p in mkorganism actdump sinkdetect sinklevels; do [ -x "$SS_BIN/$p" ] || skip "$p not built"; done
for c in munged slurmctld slurmd srun sbatch squeue sinfo; do command -v $c >/dev/null || skip "$c absent (apt-get install slurm-wlm munge)"; done
[ "$(id -u)" = 0 ] || skip "slurmd must run as root to start job steps"
S=$TMP/slurm
mkdir -p "$S"/{munge,state,spool,log} && chmod 700 "$S/munge"
dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$S/munge/munge.key"
stop() { # every daemon this test started, by its pid file
	for f in "$S/slurmd.pid" "$S/slurmctld.pid" "$S/munge/pid"; do
		[ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	sleep 1
	rm -rf "$TMP"
}
trap stop EXIT
munged --force --socket="$S/munge/sock" --key-file="$S/munge/munge.key" --pid-file="$S/munge/pid" \
	--log-file="$S/munge/log" --seed-file="$S/munge/seed" 2>"$S/munge.err" || skip "munged does not start: $(head -1 "$S/munge.err")"
H=$(hostname -s)
# two free ports in 20000-39999
port() { local p; for _ in $(seq 50); do p=$((20000 + RANDOM % 20000))
	(exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { (exec 3<>/dev/tcp/127.0.0.1/$((p + 1))) 2>/dev/null || { echo $p; return; }; }; done; echo 0; }
P=$(port)
[ "$P" != 0 ] || skip "no free port pair"
cat >"$S/slurm.conf" <<EOF
ClusterName=sinkscope-test
SlurmctldHost=$H(127.0.0.1)
SlurmctldPort=$P
SlurmdPort=$((P + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/sock
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
InactiveLimit=0
KillWait=5
MinJobAge=2
NodeName=$H NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=2000 State=UNKNOWN
PartitionName=test Nodes=$H Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf
slurmctld -f "$SLURM_CONF" 2>"$S/ctld.err" || skip "slurmctld does not start: $(head -1 "$S/ctld.err")"
slurmd -f "$SLURM_CONF" -N "$H" 2>"$S/slurmd.err" || skip "slurmd does not start: $(head -1 "$S/slurmd.err")"
up=
for _ in $(seq 60); do
	[ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && { up=1; break; }
	sleep 0.5
done
[ -n "$up" ] || skip "the node did not come up: $(tail -1 "$S/log/slurmctld.log" 2>/dev/null)"
t_pass "munged, slurmctld and slurmd started on localhost ($(sinfo -h -o '%N %c CPUs'))"
t_eq "srun runs a job step" "step $H" "$(srun -n1 -c1 --mem=100M bash -c 'echo step $(hostname -s)' 2>&1)"

# the study on the organism: locally, then through srun, then as a job array;
# traces cut to 300 tokens and t-SNE over 2 layers, to keep the test short
# (MAKEFLAGS: command-line overrides that reach the jobs' make too)
export MAKEFLAGS="P_max_tokens=300 P_tsne_before=2"
org=$TMP/org
mkorganism -o "$org" "$SS_ROOT/examples/organism.yaml" >/dev/null 2>&1
V=(BIN="$SS_BIN" MODEL_DIR="$org" THREADS=1)
ta=$(date +%s)
t_ok "local run" make -s -C "$PL" MODEL=organism OUT="$TMP/local" "${V[@]}" -j2
tb=$(date +%s)
t_ok "SLURM=1 run (srun job steps)" make -s -C "$PL" MODEL=organism OUT="$TMP/srun" "${V[@]}" SLURM=1 MEM=200M -j2
tc=$(date +%s)
jobs=$(sed -n 's/.*_job_complete: JobId=\([0-9]*\) done.*/\1/p' "$S/log/slurmctld.log" | sort -u | wc -l | tr -d ' ')
n=$(sed -n 's/^P_n_traces := //p' "$TMP/local/config.mk")
t_ok "SLURM=1: at least one Slurm job per trace and per-trace stage ($jobs jobs for $n traces)" test "$jobs" -ge $((2 * n))
same() { # DESC DIR: report, episode tables and levels identical to the local run's
	local d=$2 bad=""
	for f in report.md episodes.tsv levels.tsv normlaw.tsv assign.tsv $(cd "$TMP/local" && ls episodes/*.tsv pca/*.tsv swap/*.tsv 2>/dev/null); do
		cmp -s "$TMP/local/$f" "$d/$f" || bad="$bad $f"
	done
	t_eq "$1: the same report and tables as the local run" "" "$bad"
	[ -z "$bad" ] || diff "$TMP/local/report.md" "$d/report.md" | head -20 | sed 's/^/    # /'

}
same "SLURM=1" "$TMP/srun"
OUT=$TMP/array BIN=$SS_BIN MODEL_DIR=$org "$PL/slurm/array.sh" organism -c 1 --mem=200M -o "$S/log/job-%j.out" 2>"$S/array.err"; rc=$?
t_eq "slurm/array.sh submits the array and its report job" "0 1" "$rc $(grep -c 'submitted job array' "$S/array.err")"
for _ in $(seq 600); do
	[ -z "$(squeue -h 2>/dev/null)" ] && break
	sleep 0.5
done
td=$(date +%s)
t_eq "job array: every job finished" "" "$(squeue -h 2>&1)"
t_ok "job array: report.md written" test -s "$TMP/array/report.md"
same "job array" "$TMP/array"
failed=$(grep -l -iE 'error|exit status [1-9]' "$S"/log/job-*.out 2>/dev/null | head -3)
t_eq "job array: no job printed an error" "" "$failed"
echo "# times: local $((tb - ta)) s, SLURM=1 $((tc - tb)) s, job array $((td - tc)) s; whole test $(($(date +%s) - t0)) s"
t_done
