#!/bin/sh
# Tries the README's promise on a minimal Debian 12: debootstraps one (only
# build-essential, git, pkg-config: no libraries, no npm, no python3) into
# DIR, clones this checkout's HEAD into it and runs the given make targets
# there as root, the way a new user would. The chroot gets its own /proc,
# /sys, /dev and /run, and is a mount point of its own so `ip netns` works.
#   scripts/fresh-debian.sh [-d DIR] [TARGET ...]    (default: demo test)
# Needs root and the Debian archive (apt-get): the mirror is the one this
# machine's own apt sources name for bookworm. DIR is kept for a rerun
# (delete it for a really fresh machine). A machine whose egress goes
# through its own CA (/usr/local/share/ca-certificates) passes that CA and
# /etc/npmrc on, as its fresh machines have them too.
set -eu
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
dir=/tmp/murmur-fresh-debian
if [ "${1:-}" = -d ]; then
    [ $# -ge 2 ] || { echo "usage: $0 [-d DIR] [TARGET ...]" >&2; exit 2; }
    dir=$2
    shift 2
fi
[ $# -gt 0 ] || set -- demo test
[ "$(id -u)" = 0 ] || { echo "fresh-debian: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)

# The Debian mirror this machine's own apt uses for bookworm (deb822
# .sources files, then one-line .list files): nothing is written into the
# repository, so a machine behind its own mirror or snapshot uses that.
host_mirror() {
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk 'function flush() { if (deb && suite && uri != "") { print uri; exit } deb = suite = 0; uri = "" }
             /^[ \t]*$/ { flush(); next }
             /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
             /^URIs:/ { uri = $2 }
             /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
             END { flush() }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk '$1 == "deb" { u = ($2 ~ /^\[/) ? $3 : $2; s = ($2 ~ /^\[/) ? $4 : $3
                            if (s == "bookworm") { print u; exit } }' "$f"
    done
}
command -v debootstrap >/dev/null 2>&1 || apt-get install -y debootstrap >/dev/null
if [ ! -f "$dir/etc/debian_version" ]; then
    mirror=$(host_mirror | head -1)
    [ -n "$mirror" ] || { echo "fresh-debian: no 'deb ... bookworm' source in /etc/apt/sources.list{,.d/}: which Debian mirror?" >&2; exit 2; }
    echo "fresh-debian: debootstrap bookworm from $mirror (this machine's apt source; minbase + build-essential git pkg-config) into $dir"
    debootstrap --variant=minbase --include=build-essential,git,pkg-config,ca-certificates \
        bookworm "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 ||
        { echo "fresh-debian: debootstrap failed, see $dir.debootstrap.log" >&2; exit 1; }
fi
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/"
    chroot "$dir" update-ca-certificates >/dev/null 2>&1 || true
fi
[ -f /etc/npmrc ] && cp /etc/npmrc "$dir/etc/npmrc"
cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true

mounted=''
undo() {
    for m in $mounted; do umount -R "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
}
trap undo EXIT INT TERM
mnt() { # mnt TARGET ARGS...: mount, remembered for undo (innermost first)
    t=$1; shift
    mount "$@" "$t"
    mounted="$t $mounted"
}
mnt "$dir" --bind "$dir"
mnt "$dir/proc" -t proc proc
mnt "$dir/sys" --rbind /sys
mnt "$dir/dev" --rbind /dev
mnt "$dir/run" -t tmpfs tmpfs
mkdir -p "$dir/run/netns"

rm -rf "$dir/root/murmur"
git clone -q "$root" "$dir/root/murmur"
echo "fresh-debian: $(git -C "$dir/root/murmur" log --oneline -1); make $*"
status=0
for target in "$@"; do
    start=$(date +%s)
    # a clean environment: nothing of this machine's shell leaks in
    if env -i HOME=/root TERM="${TERM:-dumb}" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        chroot "$dir" /bin/sh -c "cd /root/murmur && make $target"; then
        echo "fresh-debian: make $target: ok in $(($(date +%s) - start))s"
    else
        status=$?
        echo "fresh-debian: make $target: FAILED (status $status)" >&2
        break
    fi
done
exit "$status"
