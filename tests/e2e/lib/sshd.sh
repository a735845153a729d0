# Sourced by end-to-end tests (after lib.sh): a private sshd on 127.0.0.1
# (own host key, own authorized key, own port) that stands in for remote
# hosts, for scripts/run-hosts.sh. start_test_sshd sets S (its directory),
# opts (ssh options), me (the user), exports MURMUR_SSH and MURMUR_SCP,
# and returns 1 (after saying why) when this machine cannot run one: the
# caller then skips. test_hosts writes a hosts file for it.
start_test_sshd() {
    . "$ROOT/tests/e2e/lib/pkgs.sh"
    if ! need_pkgs openssh-server openssh-client; then
        echo "skip: openssh-server/openssh-client missing and not root to install them"
        return 1
    fi
    S="$T/ssh"
    mkdir -p "$S"
    ssh-keygen -q -t ed25519 -N '' -f "$S/host_key" -C murmur-test-host
    ssh-keygen -q -t ed25519 -N '' -f "$S/client_key" -C murmur-test-client
    cp "$S/client_key.pub" "$S/authorized_keys"
    sport=$(free_ports 1)
    cat > "$S/sshd_config" <<CFG
ListenAddress 127.0.0.1
Port $sport
HostKey $S/host_key
AuthorizedKeysFile $S/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
PidFile $S/sshd.pid
Subsystem sftp /usr/lib/openssh/sftp-server
LogLevel ERROR
CFG
    # privilege separation directory: Debian's service creates it, we are no service
    if [ "$(id -u)" = 0 ]; then
        mkdir -p /run/sshd
    elif [ ! -d /run/sshd ]; then
        echo "skip: sshd needs /run/sshd, and only root can make it"
        return 1
    fi
    case "$(getent passwd "$(id -un)" | cut -d: -f7)" in
    */nologin|*/false) echo "skip: $(id -un) has no login shell: sshd cannot run commands as it"; return 1 ;;
    esac
    /usr/sbin/sshd -t -f "$S/sshd_config" || fail "sshd rejects its test configuration"
    /usr/sbin/sshd -D -f "$S/sshd_config" -E "$S/sshd.log" &
    E2E_PIDS="$E2E_PIDS $!"

    opts="-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5 -o IdentitiesOnly=yes"
    export MURMUR_SSH="ssh -p $sport -i $S/client_key $opts"
    export MURMUR_SCP="scp -P $sport -i $S/client_key $opts"
    me=$(id -un)
    i=0
    until $MURMUR_SSH -o BatchMode=yes "$me@127.0.0.1" true </dev/null 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 50 ] || { cat "$S/sshd.log" >&2; fail "cannot log in to the test sshd on port $sport"; }
        sleep 0.1
    done
}

# test_hosts FILE NAME: a hosts file for $n peers on free ports: peer K
# listens on 127.0.0.1:PORT+K, is reached as me@127.0.0.1, and keeps its run
# directory in $T/host-K/NAME (its own "remote" disk).
test_hosts() {
    th_port=$(free_ports "$n")
    th_k=0
    while [ $th_k -lt "$n" ]; do
        echo "$th_k 127.0.0.1:$((th_port + th_k)) $me@127.0.0.1 $T/host-$th_k/$2"
        th_k=$((th_k + 1))
    done > "$1"
}
