# The network-namespace lab for a test (sourced after lib.sh and pkgs.sh):
# lab_up PREFIX N [--profile SPEC] makes a lab of N hosts under a fresh
# tag (PREFIX and 4 random digits, not already a lab here) in $tag, taken
# down when the test exits. Namespaces refused to a non-root user: says
# why and exits 0 (skip); as root a lab that cannot be made fails the test.
lab="$ROOT/scripts/netns-lab.sh"
lab_up() {
    pre=$1; shift
    need_pkgs iproute2 || { echo "skip: iproute2 missing and not root to install it"; exit 0; }
    for _ in 1 2 3 4 5; do
        tag="$pre$(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 10000 ))"
        ip netns list 2>/dev/null | grep -q "^$tag-" || break
    done
    E2E_CLEANUP='sh "$lab" down "$tag" 2>/dev/null'
    if ! sh "$lab" up "$tag" "$@" 2> "$T/up.err"; then
        [ "$(id -u)" = 0 ] && { cat "$T/up.err" >&2; fail "scripts/netns-lab.sh up $tag $* failed as root"; }
        echo "skip: network namespaces not permitted (not root): $(head -1 "$T/up.err")"
        exit 0
    fi
}
