# need_pkgs PKG...: make sure Debian packages a test needs are installed, the
# way the Makefile's ensure_pkgs does (dpkg-query, then apt-get as root).
# Returns 1 when some are missing and we are not root to install them (the
# caller decides whether that skips or fails the test).
need_pkgs() {
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "  missing packages:$missing (run: sudo apt-get install -y$missing)" >&2
        return 1
    fi
    echo "  installing missing packages:$missing" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null ||
        fail "apt-get install$missing failed"
}
