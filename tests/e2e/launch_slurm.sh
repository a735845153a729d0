# Slurm for real: a one-node Slurm cluster on this machine (munged,
# slurmctld and slurmd started by this test from a generated slurm.conf,
# everything under the test's temp dir, ports from free_ports, no systemd),
# then `srun -n 4 murmur node ...` without --id: each task takes its peer id
# and the peer count from SLURM_PROCID/SLURM_NTASKS. The run is checked as
# the mpirun one is (tests/e2e/lib/launched.sh). Every daemon it started is
# stopped on the way out, also on failure.
# Needs root (the daemons, and installing slurmctld slurmd slurm-client
# munge when missing): a non-root user skips; as root anything that does not
# work is a failure.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
. "$ROOT/tests/e2e/lib/launched.sh"
if [ "$(id -u)" != 0 ]; then
    echo "skip: starting slurmctld, slurmd and munged takes root"
    exit 0
fi
# Installing must not start Debian's own munged or slurmd (they would
# outlive the test): without a policy-rc.d (containers have one), one that
# forbids starting services is put in place for the install only.
policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && policy=1
    E2E_CLEANUP='rm -f /usr/sbin/policy-rc.d'
fi
need_pkgs slurmctld slurmd slurm-client munge
[ -z "$policy" ] || { rm -f /usr/sbin/policy-rc.d; E2E_CLEANUP=""; }
export MURMUR_NO_BLAS_FIX=1
unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID SLURM_NTASKS SLURM_JOB_ID
n=4
rounds=10
S="$T/slurm"
mkdir -p "$S/state" "$S/spool"
chmod 700 "$S"

# ---- munge: its own key, socket, pid and log files ----
dd if=/dev/urandom of="$S/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$S/munge.key"
/usr/sbin/munged --force --key-file="$S/munge.key" --socket="$S/munge.sock" \
    --pid-file="$S/munged.pid" --log-file="$S/munged.log" --seed-file="$S/munged.seed" ||
    { cat "$S/munged.log" >&2 2>/dev/null; fail "munged did not start"; }
# munged forks into the background; it is stopped by its pid file
stop_slurm() {
    # jobs first (their tasks are children of slurmstepd, not of this shell),
    # then the daemons, each with a bounded wait and SIGKILL after it
    if [ -f "$S/slurmctld.pid" ]; then
        SLURM_CONF="$S/slurm.conf" timeout 5 scancel --full --signal=KILL --user=root 2>/dev/null || true
        for p in $(SLURM_CONF="$S/slurm.conf" timeout 5 scontrol listpids 2>/dev/null | awk 'NR > 1 { print $1 }'); do
            kill -9 "$p" 2>/dev/null || true
        done
    fi
    for f in slurmd slurmctld munged; do
        [ -f "$S/$f.pid" ] || continue
        p=$(cat "$S/$f.pid"); [ -n "$p" ] || continue
        kill "$p" 2>/dev/null || continue
        i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$p" 2>/dev/null || true
    done
}
E2E_CLEANUP=stop_slurm
i=0
until [ -S "$S/munge.sock" ] && /usr/bin/munge --socket="$S/munge.sock" -n 2>/dev/null |
        /usr/bin/unmunge --socket="$S/munge.sock" >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 50 ] || { cat "$S/munged.log" >&2; fail "munged does not answer on $S/munge.sock"; }
    sleep 0.1
done

# ---- slurm.conf: one node, 8 CPUs declared so that 4 tasks fit anywhere ----
ports=$(free_ports 2)
# The node is named after this machine, as on a cluster; the batch script's
# peers dial that name, so a name that does not resolve here falls back to
# localhost.
host=$(hostname -s)
getent hosts "$host" > /dev/null 2>&1 || host=localhost
cat > "$S/slurm.conf" <<CONF
ClusterName=murmurtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ports
SlurmdPort=$((ports + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge.sock
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=murmur Nodes=$host Default=YES MaxTime=10 State=UP
CONF
export SLURM_CONF="$S/slurm.conf"
/usr/sbin/slurmctld -c -f "$S/slurm.conf" || { cat "$S/slurmctld.log" >&2; fail "slurmctld did not start"; }
/usr/sbin/slurmd -f "$S/slurm.conf" -N "$host" || { cat "$S/slurmd.log" >&2; fail "slurmd did not start"; }
start=$(date +%s)
i=0
until [ "$(timeout 5 sinfo -h -N -o %t 2>/dev/null)" = idle ]; do
    i=$((i + 1))
    [ $i -lt 150 ] || { tail -n 20 "$S/slurmctld.log" "$S/slurmd.log" >&2; fail "the node never became idle: $(sinfo -h -N -o '%t %E' 2>&1)"; }
    sleep 0.2
done
note "one-node Slurm $(sinfo -V | cut -d' ' -f2) up in $(($(date +%s) - start))s (controller port $ports)"

# ---- the run ----
"$MURMUR" topo gen ring -n $n > "$T/ring.topo" 2>/dev/null
sh "$ROOT/scripts/make-certs.sh" "$T/certs" $n > /dev/null
port=$(free_ports $n)
start=$(date +%s)
timeout -k 5 40 srun -n $n --time=2 --kill-on-bad-exit=1 \
    "$MURMUR" node --topology "$T/ring.topo" --base-port "$port" --tls-dir "$T/certs" \
    --no-train --vector-len 5000 --rounds $rounds --run-dir "$T/run" --eval-every 1 --snapshot-every 1 \
    --log-every 0 --start-timeout 20000 > "$T/srun.out" 2>&1 ||
    { tail -n 20 "$T/srun.out" "$S/slurmd.log" >&2; fail "srun -n $n murmur node failed"; }
note "srun -n $n: $(($(date +%s) - start))s"
check_launched_ring "$T/run" $n $rounds

# ---- the batch script users submit (scripts/murmur.sbatch), as documented ----
start=$(date +%s)
job=$(MURMUR_RUNS="$T/runs" MURMUR_PORT=$(free_ports $n) MURMUR="$MURMUR" \
    timeout -k 5 60 sbatch --parsable --wait --chdir="$ROOT" --output="$T/job-%j.out" \
        --nodes=1 --ntasks-per-node=$n --time=2 "$ROOT/scripts/murmur.sbatch" "$T/ring.topo" \
        --no-train --vector-len 5000 --rounds $rounds --eval-every 1 --snapshot-every 1 \
        --log-every 0 --start-timeout 20000 2> "$T/sbatch.err") ||
    { cat "$T"/job-*.out "$T/sbatch.err" >&2; tail -n 20 "$S/slurmd.log" >&2; fail "sbatch scripts/murmur.sbatch failed"; }
note "sbatch scripts/murmur.sbatch: job $job, $(($(date +%s) - start))s"
job=${job%%;*}
grep -q "^0 $host:[0-9]" "$T/runs/slurm-$job/hosts.txt" || fail "the job's hosts file does not name the node: $(head -2 "$T/runs/slurm-$job/hosts.txt")"
check_launched_ring "$T/runs/slurm-$job" $n $rounds
[ -s "$T/runs/slurm-$job/report.txt" ] || fail "the job wrote no report"
echo "ok: srun -n $n and sbatch scripts/murmur.sbatch on a one-node Slurm"
