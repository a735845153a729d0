# make check-layers enforces the rooms: on a copy of the tree (never the real
# sources) it passes as the tree is, and fails, naming the file and line,
# when a network include is added to the mixing code in gossip/ (any
# header of net/, the algorithm table included since the weight rule moved
# to gossip/mix.h; libuv, a socket or OpenSSL header), when a header
# the command line may take from net/ brings in the network, when a model,
# mixing or BLAS include is added to net/, when the
# peer's internals or a loop are added to the command line (cli/), the
# command line or the runtime model to the peer, and the network or the
# peer to the runtime model (plan/), the peer to the watch (watch/) and the
# watch to the peer. An
# include a room is allowed is added too, and passes: the failures are the
# rules', not any edit's.
. "$(dirname "$0")/lib.sh"
clean=$T/clean
mkdir -p "$clean/scripts"
cp -R "$ROOT/Makefile" "$ROOT/mk" "$clean/"
cp "$ROOT/scripts/check-layers.sh" "$clean/scripts/"
for room in $(sed -n 's/^rooms="\(.*\)"$/\1/p' "$ROOT/scripts/check-layers.sh"); do
    mkdir -p "$clean/$room"
    cp "$ROOT/$room/README.md" "$ROOT/$room"/*.[ch] "$clean/$room/"
done
layers() { # DIR: make check-layers there, its output in $T/out, its status echoed
    st=0
    make -s -C "$1" check-layers > "$T/out" 2>&1 || st=$?
    echo $st
}
[ "$(layers "$clean")" -eq 0 ] || { cat "$T/out" >&2; fail "check-layers fails on the tree as it is"; }
grep -q "every include is allowed" "$T/out" || fail "check-layers passed without saying so: $(cat "$T/out")"

# with FILE LINE: a fresh copy of the tree with LINE inserted as FILE's first line
with() {
    rm -rf "$T/work"
    cp -R "$clean" "$T/work"
    { printf '%s\n' "$2"; cat "$clean/$1"; } > "$T/work/$1"
}
refused() { # FILE LINE: check-layers must fail and name FILE:1
    with "$1" "$2"
    st=$(layers "$T/work")
    [ "$st" -ne 0 ] || fail "check-layers passes with '$2' in $1"
    grep -q "^LAYERING: $1:1 includes" "$T/out" || { cat "$T/out" >&2; fail "'$2' in $1: no LAYERING line for $1:1"; }
    # (every line names it: a header several rooms may include is held to each one's rules)
    ! grep '^LAYERING:' "$T/out" | grep -qv "^LAYERING: $1:1 includes" ||
        { cat "$T/out" >&2; fail "'$2' in $1: other violations than it"; }
    note "refused: $1 + $2"
    n=$((n + 1))
}
allowed() { # FILE LINE: check-layers must still pass
    with "$1" "$2"
    [ "$(layers "$T/work")" -eq 0 ] || { cat "$T/out" >&2; fail "check-layers refuses '$2' in $1, which its room allows"; }
    note "allowed: $1 + $2"
}
n=0
# the network in the mixing code
refused gossip/mix.c '#include <uv.h>'
refused gossip/mix.c '#include "net/transport.h"'
refused gossip/mix.c '#include "net/wire.h"'
refused gossip/mix.h '#  include "net/transport_int.h"'
refused gossip/choco.c '#include <sys/socket.h>'
refused gossip/codec_dense.c '#include <openssl/ssl.h>'
refused gossip/codec.c '#include <openssl/evp.h>'
refused gossip/mix.c '#include "../net/transport.h"'
refused gossip/mix.c '#include "net/algo.h"'
refused net/algo.h '#include <uv.h>'
refused net/algo.h '#include "net/transport.h"'
# the model (and the mixing, and BLAS) in the network room
refused net/transport.c '#include "model/model.h"'
refused net/wire.h '#include "model/checkpoint.h"'
refused net/conn.c '#include "gossip/mix.h"'
refused net/transport.c '#include <cblas.h>'
# the peer's internals in the command line, the command line or the
# runtime model in the peer, the network in the runtime model
refused cli/cmd_node.c '#include "node/mailbox.h"'
refused cli/cmd_node.c '#include "node/node_int.h"'
refused cli/main.c '#include <uv.h>'
refused node/node.c '#include "cli/options.h"'
refused node/node.c '#include "plan/plan.h"'
refused node/node.c '#include <getopt.h>'
refused plan/plan_probe.c '#include <uv.h>'
refused plan/plan.c '#include "node/node.h"'
# murmur watch reads run directories: the peer, its loop and HTTP server
# are not its business (cli/ runs the server), nor the peer's its
refused watch/watch.c '#include "node/node.h"'
refused watch/watch_hosts.c '#include "node/peers.h"'
refused watch/watch.c '#include <uv.h>'
refused watch/watch_hosts.c '#include <microhttpd.h>'
refused node/node.c '#include "watch/watch.h"'
# what the rooms may include
allowed gossip/mix.c '#include "gossip/robust.h"'
allowed gossip/mix.c '#include <math.h>'
allowed net/transport.c '#include "base/log.h"'
allowed net/transport.c '#include <uv.h>'
allowed cli/cmd_node.c '#include "node/node.h"'
allowed cli/cmd_plan.c '#include "plan/plan.h"'
allowed watch/watch.c '#include "report/report.h"'
allowed watch/watch_hosts.c '#include "net/hosts.h"'
allowed cli/cmd_watch.c '#include "watch/watch.h"'
echo "ok: check-layers passes on the tree and refuses $n forbidden includes, each by file and line"
