# Sourced by scripts/run-local.sh, run-hosts.sh, add-peer.sh, compare.sh, sweep.sh and
# bitcompare.sh (POSIX sh): their help text, what they check before
# starting anything, whether a run directory is a given run, and how they
# say why a peer failed. The caller sets PROG (its name in messages) and
# MURMUR (the murmur binary on this machine). docs/metrics.md, "Launching".

# json_str S: a JSON string literal of S (newlines become spaces).
json_str() {
    printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g; s/	/\\t/g' | tr '\n' ' ')"
}
# json_arr ARGS...: a JSON array of the arguments as strings.
json_arr() {
    printf '['; ja_sep=''
    for ja_a in "$@"; do printf '%s' "$ja_sep"; json_str "$ja_a"; ja_sep=', '; done
    printf ']'
}

# run_mismatch DIR N TOPOLOGY_FILE NODE_FLAGS...: whether DIR, a run of
# run-local.sh, was run otherwise: 0, saying how on stdout, when its
# manifest.json is missing or records another number of peers, topology
# (by SHA-256) or node flags (then and now); 1 when it is this run, which
# `run-local.sh --resume` may then continue.
run_mismatch() {
    rm_dir=$1 rm_n=$2 rm_topo=$3; shift 3
    rm_m=$rm_dir/manifest.json
    [ -f "$rm_m" ] || { echo "$rm_dir has no manifest.json: not a run of run-local.sh"; return 0; }
    # the text after "NAME": on its line of the manifest (one field a line)
    rm_field() { sed -n "s/^  \"$1\": \(.*\),\{0,1\}\$/\1/p" "$rm_m" | sed 's/,$//'; }
    rm_had=$(rm_field n_peers)
    [ "$rm_had" = "$rm_n" ] || { echo "$rm_dir was run with -n $rm_had, not $rm_n"; return 0; }
    rm_had=$(rm_field topology | sed -n 's/.*"sha256": "\([0-9a-f]*\)".*/\1/p')
    [ "$rm_had" = "$(sha256sum "$rm_topo" | cut -d' ' -f1)" ] ||
        { echo "$rm_topo is not the topology $rm_dir was run with (its copy: $rm_dir/topology.txt)"; return 0; }
    rm_had=$(rm_field node_flags) rm_now=$(json_arr "$@")
    [ "$rm_had" = "$rm_now" ] ||
        { printf '%s was run with other node flags:\n  then: %s\n  now:  %s\n' "$rm_dir" "$rm_had" "$rm_now"; return 0; }
    return 1
}

# free_kib PATH: the KiB free (to a non-root user) on the file system that
# holds PATH, or the nearest directory above it that exists; nothing when
# df cannot tell.
free_kib() {
    fk_p=$1
    while [ ! -e "$fk_p" ] && [ "$fk_p" != "$(dirname "$fk_p")" ]; do fk_p=$(dirname "$fk_p"); done
    df -Pk "$fk_p" 2>/dev/null | awk 'NR == 2 && $4 ~ /^[0-9]+$/ { print $4 }'
}
# MIN_FREE_KIB: the least free space a run directory starts with (1 MiB):
# below it the peers could not write their logs and metrics, nor the
# launcher their exit statuses.
MIN_FREE_KIB=${MIN_FREE_KIB:-1024}
# no_space PATH: 0, saying so on stderr with "No space left on device",
# when the file system of PATH has less than MIN_FREE_KIB free; else 1.
no_space() {
    ns_free=$(free_kib "$1")
    [ -n "$ns_free" ] && [ "$ns_free" -lt "$MIN_FREE_KIB" ] || return 1
    echo "$PROG: $1: No space left on device ($ns_free KiB free on its file system, df -h" \
        "shows it; a run needs at least $MIN_FREE_KIB KiB): free some space, or put the run" \
        "elsewhere (RUNS=DIR)" >&2
    return 0
}

# holds_run DIR: 0 when DIR, a peer's node-K/, holds a run of it (a
# metrics line, checkpoint.bin or a snapshot), as murmur node judges it
# (docs/metrics.md, "One run per node-K/").
holds_run() {
    [ -s "$1/metrics.jsonl" ] || [ -f "$1/checkpoint.bin" ] && return 0
    for hr_f in "$1"/snap/r*.bin; do [ -f "$hr_f" ] && return 0; done
    return 1
}
# ran_before DIR N: 0 when a peer of the run in DIR (node-0 .. node-N-1)
# holds a run.
ran_before() {
    rb_k=0
    while [ "$rb_k" -lt "$2" ]; do
        holds_run "$1/node-$rb_k" && return 0
        rb_k=$((rb_k + 1))
    done
    return 1
}
# peers_without_checkpoint DIR N: the ids of the peers of the run in DIR
# that have no node-K/checkpoint.bin, as "2, 5" (nothing when all have one).
peers_without_checkpoint() {
    pw_k=0 pw_list=''
    while [ "$pw_k" -lt "$2" ]; do
        [ -f "$1/node-$pw_k/checkpoint.bin" ] || pw_list="$pw_list${pw_list:+, }$pw_k"
        pw_k=$((pw_k + 1))
    done
    printf '%s' "$pw_list"
}

# help_text FILE: the comment block at the top of FILE, from line 2 to the
# first line that is not a comment, without the leading '# '.
help_text() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$1"; }

# wait_pid PID: PID's exit status in st. A trapped signal interrupts
# `wait`, which then returns 128+N although PID still runs or has just
# ended: the caller's trap handler counts signals in $signals, and after
# one the wait is repeated, which returns the status PID really ended with.
signals=0
wait_pid() {
    while :; do
        wp_before=$signals
        st=0
        wait "$1" || st=$?
        [ "$signals" = "$wp_before" ] && return 0
    done
}

# node_flag NAME FLAGS...: the value of --NAME among murmur node flags, as
# getopt_long reads them (--NAME V or --NAME=V; the last one wins); empty
# when absent.
node_flag() {
    nf_name=$1; shift
    nf_val='' nf_prev=''
    for nf_a in "$@"; do
        [ "$nf_prev" = "--$nf_name" ] && nf_val=$nf_a
        case $nf_a in --"$nf_name"=*) nf_val=${nf_a#--"$nf_name"=} ;; esac
        nf_prev=$nf_a
    done
    printf '%s' "$nf_val"
}

# topo_field JSON NAME: a number or true/false of `murmur topo info --json`.
topo_field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\": *\([a-z0-9.]*\).*/\1/p" | head -n 1; }

# check_topology FILE N FLAGS...: 0 when N peers with these node flags can
# run on topology FILE; else says why on stderr and returns 1: the file does
# not load, N is not its number of peers, or its W is column-stochastic
# only (a directed graph that is not also row-stochastic) and --algo is not
# pushsum, so the peers would converge to a weighted average, not the mean.
# Sets topo_peers.
check_topology() {
    ct_file=$1 ct_n=$2; shift 2
    ct_json=$("$MURMUR" topo info --json --no-rho "$ct_file" 2>&1) || {
        echo "$PROG: topology $(printf '%s' "$ct_json" | sed 's/^murmur topo[a-z ]*: //')" >&2
        return 1
    }
    topo_peers=$(topo_field "$ct_json" peers)
    if [ -n "$ct_n" ] && [ "$ct_n" != "$topo_peers" ]; then
        echo "$PROG: -n $ct_n, but $ct_file has $topo_peers peers: give -n $topo_peers (each peer waits for its neighbours, so fewer peers stall and more fail)" >&2
        return 1
    fi
    ct_algo=$(node_flag algo "$@")
    if [ "$(topo_field "$ct_json" column_stochastic)" = true ] &&
        [ "$(topo_field "$ct_json" row_stochastic)" = false ] && [ "${ct_algo:-dpsgd}" != pushsum ]; then
        if [ -n "$ct_algo" ]; then ct_algo="--algo $ct_algo"; else ct_algo="the default --algo dpsgd"; fi
        echo "$PROG: $ct_file is a directed graph whose W is column-stochastic only: only --algo pushsum" \
            "averages correctly on it ($ct_algo would drift to a weighted average); add --algo pushsum" \
            "to the node flags" >&2
        return 1
    fi
    return 0
}

# check_node_flags FILE N FLAGS...: 0 when murmur node takes these flags
# with topology FILE (and N peers, when N is not empty), as peer 0 would:
# `murmur node --dry-run`, the node's own check, the one its start makes
# (docs/node.md); else says the node's reason once on stderr and returns 1
# (every peer would print it and exit 2). Without --plaintext or --tls-dir
# in FLAGS the dry run gets --plaintext: it reads no certificate.
check_node_flags() {
    cf_file=$1 cf_n=$2; shift 2
    cf_tls=--plaintext
    for cf_a in "$@"; do
        case $cf_a in --plaintext|--tls-dir|--tls-dir=*) cf_tls='' ;; esac
    done
    # shellcheck disable=SC2086
    cf_out=$("$MURMUR" node --dry-run --id 0 ${cf_n:+--n-peers "$cf_n"} --topology "$cf_file" \
        $cf_tls "$@" 2>&1 >/dev/null) && return 0
    echo "$PROG: murmur node refuses these node flags: $(printf '%s\n' "$cf_out" |
        sed 's/^murmur node: //' | head -n 3)" >&2
    return 1
}

# ephemeral_range: "LO HI" of this machine's kernel ephemeral port range
# (outgoing connections take their local port from it), or nothing.
ephemeral_range() { tr -s ' \t' '  ' < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null; }

# check_ports BASE COUNT WHAT: 0 when ports BASE..BASE+COUNT-1 stay out of
# this machine's ephemeral range; else says which ports to use instead and
# returns 1. A listening port inside the range can be taken, at any moment,
# by an outgoing connection of a peer or of anything else on the machine:
# the peer then fails with "address already in use".
check_ports() {
    cp_base=$1 cp_count=$2 cp_what=$3
    cp_last=$((cp_base + cp_count - 1))
    cp_range=$(ephemeral_range)
    [ -n "$cp_range" ] || return 0
    set -- $cp_range
    cp_lo=$1 cp_hi=$2
    [ "$cp_last" -lt "$cp_lo" ] || [ "$cp_base" -gt "$cp_hi" ] && return 0
    if [ $((29500 + cp_count - 1)) -lt "$cp_lo" ]; then
        cp_use=29500
    elif [ $((1024 + cp_count - 1)) -lt "$cp_lo" ]; then
        cp_use=$(((cp_lo - cp_count) / 1000 * 1000))
        [ "$cp_use" -ge 1024 ] || cp_use=1024
    elif [ $((cp_hi + cp_count)) -le 65535 ]; then
        cp_use=$((cp_hi + 1))
    else
        cp_use=''
    fi
    echo "$PROG: $cp_what $cp_base..$cp_last overlap this machine's ephemeral port range $cp_lo..$cp_hi" \
        "(/proc/sys/net/ipv4/ip_local_port_range), from which outgoing connections take their ports:" \
        "a peer would fail with 'address already in use' when one is taken." >&2
    if [ -n "$cp_use" ]; then
        echo "$PROG: use -p $cp_use (ports $cp_use..$((cp_use + cp_count - 1))): any base from 1024 to" \
            "$((cp_lo - cp_count)) keeps them below the range, any from $((cp_hi + 1)) above it" >&2
    else
        echo "$PROG: $cp_count ports do not fit outside that range: narrow it (sysctl net.ipv4.ip_local_port_range)" >&2
    fi
    return 1
}

# ports_busy BASE COUNT [listen]: 0 when a local socket (IPv4 or IPv6) holds
# one of the ports BASE..BASE+COUNT-1: in any state, or with `listen` only
# a listening one (what makes a peer's bind fail; the TIME_WAIT left by a
# run that just ended on these ports does not).
ports_busy() {
    cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v lo="$1" -v n="$2" -v only="${3:-}" '
        BEGIN { for (p = lo; p < lo + n; p++) want[sprintf("%04X", p)] = 1 }
        only == "listen" && $4 != "0A" { next }
        { k = index($2, ":"); if (k && toupper(substr($2, k + 1)) in want) busy = 1 }
        END { exit !busy }'
}

# free_base COUNT: a random base port from 20000 up with COUNT ports that no
# local socket holds, all below the ephemeral range (benchmarks that start
# peers themselves); nothing and status 1 after ten tries.
free_base() {
    fb_lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        fb_b=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (fb_lo - 20100 - $1)))
        ports_busy "$fb_b" "$1" || { echo "$fb_b"; return 0; }
    done
    return 1
}

# peer_failure DIR STATUS: why the peer whose directory is DIR (node-K/)
# exited with STATUS, on stdout, indented: for status 3 (a neighbour
# refused: the run is misconfigured) and 4 (isolated: no neighbour ever
# mixed) the peer's verdict, one line per neighbour and why (its `ERROR:
# refused:` / `ERROR: isolated:` lines, docs/node.md); otherwise its last
# ERROR line (console.log). Then the reason of its `end` metrics line, or
# that it has none. First, when DIR's file system has less than
# MIN_FREE_KIB free, that ("No space left on device"). STATUS may be
# "unknown" (not recorded).
peer_failure() {
    pf_dir=$1 pf_st=$2
    case $pf_st in ''|*[!0-9]*) pf_st=-1 ;; esac # not recorded
    pf_free=$(free_kib "$pf_dir") pf_full=0
    if [ -n "$pf_free" ] && [ "$pf_free" -lt "$MIN_FREE_KIB" ]; then
        pf_full=1
        echo "    No space left on device: $pf_free KiB free on the file system of $pf_dir" \
            "(what the peer said may be lost with its console.log)"
    fi
    if [ "$pf_st" -gt 128 ] && [ "$pf_st" -lt 160 ]; then
        echo "    killed by signal $((pf_st - 128)) (SIG$(kill -l $((pf_st - 128)) 2>/dev/null || echo '?'))"
    fi
    if [ "$pf_st" = 3 ] || [ "$pf_st" = 4 ]; then
        grep 'ERROR: \(refused\|isolated\): ' "$pf_dir/console.log" 2>/dev/null |
            sed 's/^.*ERROR: \(refused\|isolated\): /    /'
    else
        pf_err=$(grep 'ERROR: \|^murmur [a-z-]*: ' "$pf_dir/console.log" 2>/dev/null | grep -v 'warning: ' | tail -n 1 |
            sed 's/^[0-9:.]* \(\[peer [0-9]*\] \)\{0,1\}//')
        [ -n "$pf_err" ] && echo "    last error: $pf_err"
    fi
    pf_end=$(grep '"ev":"end"' "$pf_dir/metrics.jsonl" 2>/dev/null | tail -n 1 |
        sed -n 's/.*"reason":"\([^"]*\)".*/\1/p')
    if [ -n "$pf_end" ]; then
        echo "    end line: reason $pf_end"
    elif [ -s "$pf_dir/metrics.jsonl" ]; then
        echo "    no end line in metrics.jsonl: it did not stop by itself (killed or crashed)"
    elif [ $pf_full = 1 ]; then
        echo "    no metrics: none could be written (the disk is full)"
    else
        echo "    no metrics: it stopped before it started to train"
    fi
}

# isolation_warning DIR: the first isolation warning of the peer whose
# directory is DIR, indented: each neighbour and why it did not mix (the
# `WARN: isolated:` lines after its first `WARN: isolated for`).
isolation_warning() {
    awk '/WARN: isolated for/ { n++; if (n > 1) exit; sub(/.*WARN: /, "    "); print; next }
         n == 1 && /WARN: isolated: / { sub(/.*WARN: isolated: /, "      "); print }' "$1/console.log" 2>/dev/null
}

# run_verdict REFUSED ISOLATED: one line on stderr saying what the peers'
# statuses 3 and 4 mean for the run, when there were any.
run_verdict() {
    if [ "$1" -gt 0 ]; then
        echo "$PROG: the run is misconfigured: $1 peer(s) could not mix with a neighbour for the whole run" \
            "because the two are configured differently (status 3; the reasons above: TLS or --plaintext," \
            "model, --algo, the topology file, certificates, or one --id given twice)" >&2
    fi
    if [ "$2" -gt 0 ]; then
        echo "$PROG: $2 peer(s) were isolated: they mixed with none of their neighbours for the whole run" \
            "(status 4: were the others started, and at the addresses the peers were given?)" >&2
    fi
}

# is_uint S: S is a decimal number of at most 6 digits.
is_uint() { case $1 in ''|*[!0-9]*) return 1 ;; esac; [ ${#1} -le 6 ]; }

# launcher_defaults HERE: MURMUR (./murmur from the repository root, else
# the one next to scripts/ in HERE), MAKE_CERTS and RUNS, unless set.
launcher_defaults() {
    if [ -z "${MURMUR:-}" ]; then
        if [ -x ./murmur ]; then MURMUR=./murmur; else MURMUR=$1/../murmur; fi
    fi
    MAKE_CERTS=${MAKE_CERTS:-$1/make-certs.sh}
    RUNS=${RUNS:-runs}
}
