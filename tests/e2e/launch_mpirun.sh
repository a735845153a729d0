# Cluster launchers: `mpirun -np 4 murmur node ...` with no --id: each peer
# takes its id and the peer count from Open MPI's OMPI_COMM_WORLD_RANK/SIZE.
# Then PMI_RANK/PMI_SIZE (MPICH, Intel MPI, srun --mpi=pmi2) and
# SLURM_PROCID/SLURM_NTASKS (srun) by hand, 2 peers each, and a size that
# disagrees with the topology must be refused.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/lib/pkgs.sh"
. "$ROOT/tests/e2e/lib/launched.sh"
if ! need_pkgs openmpi-bin; then
    echo "skip: openmpi-bin missing and not root to install it"
    exit 0
fi
export MURMUR_NO_BLAS_FIX=1
# a launcher variable inherited from outside would override the ones we set
unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID SLURM_NTASKS
n=4
rounds=10
"$MURMUR" topo gen ring -n $n > "$T/ring.topo" 2>/dev/null
sh "$ROOT/scripts/make-certs.sh" "$T/certs" $n > /dev/null
port=$(free_ports $n)
asroot=""; [ "$(id -u)" = 0 ] && asroot=--allow-run-as-root
start=$(date +%s)
timeout -k 5 90 mpirun $asroot --oversubscribe -np $n -x MURMUR_NO_BLAS_FIX \
    "$MURMUR" node --topology "$T/ring.topo" --base-port "$port" --tls-dir "$T/certs" \
    --no-train --vector-len 5000 --rounds $rounds --run-dir "$T/mpi" --eval-every 1 --snapshot-every 1 \
    --log-every 0 --start-timeout 20000 > "$T/mpi.out" 2>&1 ||
    { tail -20 "$T/mpi.out" >&2; fail "mpirun -np $n murmur node failed"; }
note "mpirun -np $n: $(($(date +%s) - start))s"
check_launched_ring "$T/mpi" $n $rounds

# rankenv NAME RVAR SVAR: 2 peers started by hand with a launcher's variables.
"$MURMUR" topo gen complete -n 2 > "$T/two.topo" 2>/dev/null
rankenv() {
    port=$(free_ports 2); pids=""
    for k in 0 1; do
        env "$2=$k" "$3=2" "$MURMUR" node --topology "$T/two.topo" --base-port "$port" --plaintext \
            --no-train --vector-len 100 --rounds 5 --run-dir "$T/$1" --log-every 0 --eval-every 0 \
            --start-timeout 20000 > "$T/$1.$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
    wait_all $pids || fail "$2/$3: a peer failed"
    for k in 0 1; do
        m="$T/$1/node-$k/metrics.jsonl"
        [ "$(jfield "$m" start peer)" = $k ] || fail "$2=$k did not make peer $k"
        [ "$(jfield "$m" end round)" = 5 ] || fail "$2=$k: peer did not finish"
        grep -q "\"nbrs\":\[$((1 - k))\]" "$m" || fail "$2=$k: peer never mixed with the other"
    done
    # the size is honoured too: one that disagrees with the topology is refused
    st=0
    env "$2=0" "$3=3" "$MURMUR" node --topology "$T/two.topo" --base-port "$port" --plaintext \
        --no-train --vector-len 100 --rounds 5 --run-dir "$T/$1-bad" > "$T/$1.bad" 2>&1 || st=$?
    [ $st != 0 ] && grep -q "3 peers given" "$T/$1.bad" || fail "$3=3 with a 2-peer topology was not refused"
    note "$2/$3: peers 0 and 1 ran; $3=3 refused"
}
rankenv pmi PMI_RANK PMI_SIZE
rankenv slurm SLURM_PROCID SLURM_NTASKS
echo "ok: mpirun and launcher rank variables"
