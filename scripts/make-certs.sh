#!/bin/sh
# Makes a cluster CA and one certificate per peer for murmur's TLS transport.
#   scripts/make-certs.sh DIR N
# creates DIR/ca.pem, DIR/ca.key and DIR/node-K.pem, DIR/node-K.key for
# K = 0..N-1. Each peer certificate names its peer as CN=murmur-peer-K and as
# SAN DNS:murmur-peer-K. Idempotent: an existing CA is kept, and existing peer
# certificates signed by it are kept. Keys are created mode 600.
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
if [ $# -ne 2 ]; then
    echo "usage: $0 DIR N" >&2; exit 2
fi
dir=$1; n=$2
case "$n" in ''|*[!0-9]*) echo "make-certs: N must be a number, got '$n'" >&2; exit 2 ;; esac
[ "$n" -ge 1 ] || { echo "make-certs: N must be at least 1" >&2; exit 2; }
command -v openssl >/dev/null || { echo "make-certs: openssl not found" >&2; exit 1; }
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
    crt="$dir/node-$k.pem"; key="$dir/node-$k.key"
    if [ -f "$crt" ] && [ -f "$key" ] &&
       openssl verify -CAfile "$dir/ca.pem" "$crt" >/dev/null 2>&1; then
        k=$((k + 1)); continue
    fi
    ext=$(mktemp)
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:murmur-peer-%s\n' "$k" > "$ext"
    openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
        -keyout "$key" -out "$dir/node-$k.csr" -subj "/CN=murmur-peer-$k" 2>/dev/null
    openssl x509 -req -in "$dir/node-$k.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
        -CAcreateserial -out "$crt" -days 825 -extfile "$ext" 2>/dev/null
    rm -f "$ext" "$dir/node-$k.csr"
    chmod 600 "$key"
    chmod 644 "$crt"
    k=$((k + 1))
done
echo "make-certs: $n peer certificates in $dir (node-K.pem / node-K.key)"
