# Four training peers of a tiny model on $topo (a ring of 4 the caller made),
# for the outer optimizer's tests (sourced after lib.sh and tiny_data
# "$T/data"): each run in $T/NAME, its peers' output in $T/NAME.K.out.
#
#   start4 NAME ROUNDS FLAGS...   the 4 peers in the background (pids in $pids),
#                                 snapshots every 2 rounds
#   run4 NAME ROUNDS FLAGS...     the same, to the end: fails unless every peer exits 0
#   snap RUN K ROUND              peer K's snapshot file of that round
#   same_floats A B               the parameters of two snapshot files are identical
#                                 (between the 32-byte header, which names the
#                                 peer, and the digest)
#   same_snaps RUN_A RUN_B ROUND  every peer's snapshot identical, or fail
start4() {
    name=$1; rounds=$2; shift 2
    port=$(free_ports 4); pids=""
    for k in 0 1 2 3; do
        MURMUR_NO_BLAS_FIX=1 "$MURMUR" node --id $k --topology "$topo" --base-port "$port" \
            --plaintext --data "$T/data" --layers 2 --width 32 --heads 2 --ctx 32 --batch 8 \
            --lr 3e-3 --rounds "$rounds" --eval-every 0 --snapshot-every 2 --log-every 0 \
            --round-timeout 60000 --peer-timeout 60000 --start-timeout 60000 \
            --run-dir "$T/$name" "$@" >> "$T/$name.$k.out" 2>&1 &
        pids="$pids $!"; E2E_PIDS="$E2E_PIDS $!"
    done
}
run4() {
    start4 "$@"
    wait_all $pids || { cat "$T/$1.0.out" >&2; fail "$1: a peer failed"; }
}
snap() { echo "$T/$1/node-$2/snap/r0000000$3.bin"; }
same_floats() {
    size=$(wc -c < "$1")
    cmp -s -i 32 -n $((size - 64)) "$1" "$2"
}
same_snaps() {
    for k in 0 1 2 3; do
        cmp -s "$(snap "$1" $k "$3")" "$(snap "$2" $k "$3")" ||
            fail "$1 and $2 differ at peer $k, round $3"
    done
}
