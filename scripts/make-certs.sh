#!/bin/sh
# Makes a cluster CA and one certificate per peer for murmur's TLS transport.
#   scripts/make-certs.sh DIR N
# creates DIR/ca.pem, DIR/ca.key and DIR/node-K.pem, DIR/node-K.key for
# K = 0..N-1. Each peer certificate names its peer as CN=murmur-peer-K and as
# SAN DNS:murmur-peer-K. Idempotent: an existing CA is kept, and existing peer
# certificates signed by it are kept. Keys are created mode 600.
#   scripts/make-certs.sh --add DIR K
# issues one more: DIR/node-K.pem and DIR/node-K.key for peer K, signed by
# the CA already in DIR (a peer joining a running cluster, docs/membership.md).
# Refused when DIR has no CA key (DIR/ca.key: run it where the CA key is) or
# when node-K.pem or node-K.key exists already (peer K has a certificate:
# remove both to issue a new one). The CA and the other peers' files are
# left as they are.
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
usage() { echo "usage: $0 DIR N   or   $0 --add DIR K" >&2; exit 2; }
add=0
if [ "${1:-}" = --add ]; then add=1; shift; fi
[ $# -eq 2 ] || usage
dir=$1; n=$2
what=N; [ $add = 1 ] && what=K
case "$n" in ''|*[!0-9]*) echo "make-certs: $what must be a number, got '$n'" >&2; exit 2 ;; esac
[ $add = 1 ] || [ "$n" -ge 1 ] || { echo "make-certs: N must be at least 1" >&2; exit 2; }
command -v openssl >/dev/null || { echo "make-certs: openssl not found" >&2; exit 1; }

# issue K: a fresh P-256 key and a certificate for peer K signed by DIR's CA.
issue() {
    crt="$dir/node-$1.pem"; key="$dir/node-$1.key"
    ext=$(mktemp)
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:murmur-peer-%s\n' "$1" > "$ext"
    openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
        -keyout "$key" -out "$dir/node-$1.csr" -subj "/CN=murmur-peer-$1" 2>/dev/null
    openssl x509 -req -in "$dir/node-$1.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
        -CAcreateserial -out "$crt" -days 825 -extfile "$ext" 2>/dev/null
    rm -f "$ext" "$dir/node-$1.csr"
    chmod 600 "$key"
    chmod 644 "$crt"
}

if [ $add = 1 ]; then
    k=$(printf '%s' "$n" | sed 's/^0*\(.\)/\1/') # the id as peers name it: no leading zeros
    if [ ! -f "$dir/ca.key" ]; then
        if [ -f "$dir/ca.pem" ]; then
            echo "make-certs: --add: $dir has the CA certificate but not its key ($dir/ca.key):" \
                "issue peer $k's certificate where the CA key is" >&2
        else
            echo "make-certs: --add: $dir has no CA ($dir/ca.pem, $dir/ca.key): make the cluster's" \
                "certificates first with '$0 DIR N', or name the directory that holds them" >&2
        fi
        exit 1
    fi
    [ -f "$dir/ca.pem" ] || { echo "make-certs: --add: $dir has a CA key but no $dir/ca.pem" >&2; exit 1; }
    for f in "$dir/node-$k.pem" "$dir/node-$k.key"; do
        if [ -e "$f" ]; then
            echo "make-certs: --add: $f exists already: peer $k has a certificate (remove" \
                "$dir/node-$k.pem and $dir/node-$k.key to issue a new one)" >&2
            exit 1
        fi
    done
    umask 077
    issue "$k"
    echo "make-certs: added peer $k: $dir/node-$k.pem / node-$k.key, signed by $dir/ca.pem"
    exit 0
fi

mkdir -p "$dir"
umask 077

if [ -f "$dir/ca.pem" ] && [ -f "$dir/ca.key" ]; then
    echo "make-certs: keeping the existing CA in $dir/ca.pem"
else
    openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
        -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 3650 \
        -subj "/CN=murmur-cluster-ca" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    echo "make-certs: new CA $dir/ca.pem"
fi
chmod 600 "$dir/ca.key"
chmod 644 "$dir/ca.pem"

k=0
while [ "$k" -lt "$n" ]; do
    if [ -f "$dir/node-$k.pem" ] && [ -f "$dir/node-$k.key" ] &&
       openssl verify -CAfile "$dir/ca.pem" "$dir/node-$k.pem" >/dev/null 2>&1; then
        k=$((k + 1)); continue
    fi
    issue "$k"
    k=$((k + 1))
done
echo "make-certs: $n peer certificates in $dir (node-K.pem / node-K.key)"
