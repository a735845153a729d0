#!/bin/sh
# Runs a grid of trainings -- topologies x node-flag axes x seeds -- one run
# after another, each an ordinary run directory, then aggregates them.
#
#   scripts/sweep.sh [-r NAME] [-p BASE_PORT] [-i SEC] [-q] [--retry-failed]
#                    [--no-resume] [--check] [--no-aggregate] SPEC
#
# SPEC is a text file, one statement per line, '#' starts a comment
# (docs/sweep.md has the full rules and an example):
#   topology FILE...     topology files; '{n}' in a name stands for each peer count
#   peers N...           peer counts (optional: else each file's own count)
#   seeds S...           seeds, one run per seed (--seed S); A..B is a range
#   flags FLAG...        node flags every run gets (may repeat; appended)
#   axis --FLAG V...     a node flag swept over values (one line per flag)
#   lr V...              short for: axis --lr V...
#   partition V...       short for: axis --partition V...
#   baseline SETTING     the setting the report pairs every other against, seed
#                        by seed (murmur report --sweep --baseline)
# A bad spec is refused before anything runs, naming the file, the line and
# the reason (unknown key or node flag, an empty list, a topology file that
# does not exist, has another number of peers or needs --algo pushsum, a key
# or flag given twice, an axis the fixed flags also set, a flag the sweep
# sets itself), and a setting whose flags `murmur node --dry-run`, the
# node's own option parsing and start-up checks, refuses.
#
# Run SEED of setting SETTING goes to runs/NAME/SETTING/sSEED/ through
# scripts/run-local.sh (NAME: -r, default the spec's file name without its
# extension). SETTING is the topology's name (its file name without .topo),
# then ',FLAG=VALUE' for each axis in the order of the flags' names, e.g.
# ring-8,lr=3e-3,partition=genre: it depends on the values only, so it
# stays the same when the spec grows. Runs go seed by seed (every setting of
# seed 1, then of seed 2, ...), so an early stop leaves whole seeds.
# Each run gets its own ports (-p BASE_PORT, default 21000, onwards, below
# the kernel's ephemeral range, skipping ports any socket holds).
#
# Progress: one line when a run starts and one when it ends, with the runs
# done, failed and left and an ETA from the mean time of this invocation's
# runs; run-local.sh's progress line every -i SEC (default 5) in between
# (-q sends run-local.sh's output to runs/NAME/output.log instead).
#
# Resumable: a run is finished when all its peers exited 0 and `murmur
# report` succeeded on it; the sweep then writes SETTING/sSEED/sweep.done.
# Running the same command again skips finished runs and goes on with the
# others: an interrupted run (Ctrl-C: sweep.interrupted) or one without a
# marker (the sweep was killed) is continued from its peers' checkpoints
# (run-local.sh --resume; one run, in one directory), unless it was run
# with another peer count, topology or node flags than the spec gives it
# now, or with --no-resume, or when a peer of it has no checkpoint (it
# would start again from round 0 while the others go on; run-local.sh
# refuses such a --resume): then it is moved aside to sSEED.attempt-K/ and
# run again from round 0. A resumed run is not bit for bit the
# uninterrupted one (the rounds around the cut are mixed with fewer
# neighbours, docs/sweep.md); one rerun from round 0 is. A failed run (sweep.failed: a peer exited non-zero, or its report
# failed) is kept and rerun from round 0 only with --retry-failed, or when
# the spec has changed its node flags since (it is then a new run).
# Nothing unfinished is ever averaged: `murmur report --sweep` lists and
# excludes it.
#
# Ctrl-C (SIGINT, SIGTERM, SIGHUP; and SIGPIPE, when the output was piped
# into a reader that has gone) stops the current run cleanly (its
# peers get one SIGTERM each from run-local.sh, finish their round, write
# their checkpoint and exit 0), marks it interrupted and starts no other.
# run-local.sh runs in a session of its own, so a terminal's Ctrl-C reaches
# only this script.
#
#   -r NAME            the sweep's directory under runs/
#   -p BASE_PORT       first port (default 21000)
#   -i SEC             run-local.sh's progress interval (default 5); a run's end
#                      is noticed at its next progress line
#   -q                 run-local.sh's output to runs/NAME/output.log
#   --retry-failed     rerun failed runs too
#   --no-resume        rerun interrupted and unfinished runs from round 0
#   --check            check the spec, print the grid and exit
#   --no-aggregate     do not run `murmur report --sweep` at the end
#
# At the end: `murmur report --sweep runs/NAME` (table, runs/NAME/sweep.csv,
# sweep-runs.csv and three plots in runs/NAME/plots/).
# A disk with less than 1 MiB free on the sweep's directory ("No space
# left on device") stops the sweep before its next run (exit 1): that run
# and the rest are left, not failed, for the next invocation.
# Exit status: 0 every planned run finished; 1 a run failed or is left
# unfinished, or the aggregation failed; 2 usage or a refused spec; 130
# interrupted. Environment: MURMUR, MAKE_CERTS, RUNS, GRACE (as run-local.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
PROG=sweep
. "$here/launch-lib.sh"
if [ -z "${MURMUR:-}" ]; then
    if [ -x ./murmur ]; then MURMUR=./murmur; else MURMUR=$here/../murmur; fi
fi
RUNS=${RUNS:-runs}

usage_line="usage: sweep.sh [-r NAME] [-p BASE_PORT] [-i SEC] [-q] [--retry-failed] [--no-resume] [--check] [--no-aggregate] SPEC"
die() { echo "sweep: $*" >&2; exit 1; }
bad() { echo "sweep: $*" >&2; echo "$usage_line" >&2; exit 2; }
is_uint() { case $1 in ''|*[!0-9]*) return 1 ;; esac; [ ${#1} -le 9 ]; }

name='' base_port=21000 interval=5 quiet=0 retry_failed=0 no_resume=0 check_only=0 aggregate=1 spec=''
while [ $# -gt 0 ]; do
    case $1 in
    -r|-p|-i) [ $# -ge 2 ] || bad "$1 needs a value" ;;
    esac
    case $1 in
    -r) name=$2; shift 2 ;;
    -p) base_port=$2; shift 2 ;;
    -i) interval=$2; shift 2 ;;
    -q) quiet=1; shift ;;
    --retry-failed) retry_failed=1; shift ;;
    --no-resume) no_resume=1; shift ;;
    --check) check_only=1; shift ;;
    --no-aggregate) aggregate=0; shift ;;
    -h|--help) help_text "$0"; exit 0 ;;
    -*) bad "unknown option: $1" ;;
    *) [ -z "$spec" ] || bad "one SPEC file (got $spec and $1)"; spec=$1; shift ;;
    esac
done
[ -n "$spec" ] || bad "which spec? give SPEC (docs/sweep.md)"
[ -f "$spec" ] && [ -r "$spec" ] || die "spec $spec: not a readable file"
if [ -z "$name" ]; then name=$(basename "$spec"); name=${name%.*}; fi
case $name in ''|/*|*..*|-*|*[!A-Za-z0-9._/+-]*) bad "-r NAME: a name under $RUNS/ (letters, digits, . _ - + /; no leading /, no ..)" ;; esac
is_uint "$base_port" && [ "$base_port" -ge 1024 ] || bad "-p BASE_PORT: a port from 1024"
is_uint "$interval" && [ "$interval" -ge 1 ] || bad "-i SEC: a whole number of seconds >= 1"
[ -x "$MURMUR" ] || command -v "$MURMUR" >/dev/null 2>&1 || die "$MURMUR not found (run make, or set MURMUR=path)"
for tool in setsid flock; do
    command -v $tool >/dev/null 2>&1 || die "$tool (util-linux) not found"
done

# --- the spec ------------------------------------------------------------
# spec_err LINE REASON: refuse the spec (exit 2), naming file and line.
spec_err() { echo "sweep: $spec:$1: $2" >&2; exit 2; }
spec_err0() { echo "sweep: $spec: $1" >&2; exit 2; }

# The node's flags, from `murmur node --help`: "--name" (takes no value) or
# "--name ARG" (takes one), one per line.
# a flag's value is named in capitals, or like R:G,... (--gossip-steps-schedule)
node_help=$("$MURMUR" node --help 2>&1 | sed -n 's/^  \(--[a-z0-9-]*\)\( [A-Z][A-Z:,.]*\)\{0,1\}\( .*\)\{0,1\}$/\1\2/p')
[ -n "$node_help" ] || die "cannot read the node's flags from '$MURMUR node --help'"
# flag_kind --NAME: "value", "bool" or "unknown".
flag_kind() {
    fk=$(printf '%s\n' "$node_help" | awk -v f="$1" '$1 == f { print (NF > 1 ? "value" : "bool"); exit }')
    printf '%s' "${fk:-unknown}"
}
# Flags the sweep sets for every run: never in the spec.
owned_reason() {
    case $1 in
    --seed) echo "--seed is set by the sweep: list seeds on the 'seeds' line" ;;
    --id|--n-peers|--topology|--base-port|--run-dir|--tls-dir|--hosts|--listen|--resume)
        echo "$1 is set by the sweep for each run (the topology on the 'topology' line)" ;;
    --dry-run) echo "--dry-run is how the sweep checks each setting's flags (sweep.sh --check)" ;;
    *) return 1 ;;
    esac
}
valid_value() { case $1 in ''|*[!A-Za-z0-9._:+-]*) return 1 ;; esac; }

topo_words='' topo_line='' peers_list='' peers_line='' seeds_list='' seeds_line=''
baseline='' baseline_line=''
fixed_flags='' fixed_names=' ' axis_n=0
lineno=0
# add_axis LINE FLAG VALUES...
add_axis() {
    al=$1 af=$2; shift 2
    case $af in --[a-z]*) ;; *) spec_err "$al" "axis: '$af' is not a node flag (--NAME)" ;; esac
    case $af in *=*) spec_err "$al" "axis $af: give the flag, then its values (axis --lr 1e-3 3e-3)" ;; esac
    r=$(owned_reason "$af") && spec_err "$al" "$r"
    case $(flag_kind "$af") in
    unknown) spec_err "$al" "axis: unknown node flag $af (murmur node --help)" ;;
    bool) spec_err "$al" "axis: $af takes no value; put it in 'flags' (it cannot be an axis)" ;;
    esac
    [ $# -gt 0 ] || spec_err "$al" "empty axis $af: give at least one value"
    j=0
    while [ $j -lt $axis_n ]; do
        eval "of=\$axis_flag_$j ol=\$axis_line_$j"
        [ "$of" = "$af" ] && spec_err "$al" "axis $af given twice (first on line $ol)"
        j=$((j + 1))
    done
    seen=' '
    for v in "$@"; do
        valid_value "$v" || spec_err "$al" "axis $af: value '$v' may hold only letters, digits and . _ : + - (it becomes part of a directory name)"
        case $seen in *" $v "*) spec_err "$al" "axis $af: value $v given twice" ;; esac
        seen="$seen$v "
    done
    eval "axis_flag_$axis_n=\$af axis_line_$axis_n=\$al axis_vals_$axis_n=\$*"
    axis_n=$((axis_n + 1))
}
# add_flags LINE WORDS...: fixed node flags.
add_flags() {
    fl=$1; shift
    [ $# -gt 0 ] || spec_err "$fl" "empty 'flags' line"
    while [ $# -gt 0 ]; do
        w=$1; shift
        case $w in
        --[a-z]*) ;;
        *) spec_err "$fl" "flags: '$w' is not a node flag, nor the value of one" ;;
        esac
        fn=${w%%=*}
        r=$(owned_reason "$fn") && spec_err "$fl" "$r"
        kind=$(flag_kind "$fn")
        case $kind in
        unknown) spec_err "$fl" "flags: unknown node flag $fn (murmur node --help)" ;;
        bool) [ "$fn" = "$w" ] || spec_err "$fl" "flags: $fn takes no value" ;;
        value)
            if [ "$fn" = "$w" ]; then
                [ $# -gt 0 ] || spec_err "$fl" "flags: $fn needs a value"
                w="$w $1"; shift
            fi ;;
        esac
        case $fixed_names in *" $fn:"*)
            prev=${fixed_names#*" $fn:"}; prev=${prev%% *}
            spec_err "$fl" "flags: $fn given twice (first on line $prev)" ;;
        esac
        fixed_names="$fixed_names$fn:$fl "
        fixed_flags="$fixed_flags $w"
    done
}

cr=$(printf '\r')
while IFS= read -r raw || [ -n "$raw" ]; do
    lineno=$((lineno + 1))
    raw=${raw%"$cr"} # a spec saved with CRLF line ends reads the same
    line=${raw%%#*}
    set -f
    # shellcheck disable=SC2086
    set -- $line
    set +f
    [ $# -eq 0 ] && continue
    key=$1; shift
    case $key in
    topology|topologies)
        [ -z "$topo_line" ] || spec_err $lineno "'topology' given twice (first on line $topo_line)"
        [ $# -gt 0 ] || spec_err $lineno "empty 'topology' line: give one or more topology files"
        topo_words=$* topo_line=$lineno ;;
    peers)
        [ -z "$peers_line" ] || spec_err $lineno "'peers' given twice (first on line $peers_line)"
        [ $# -gt 0 ] || spec_err $lineno "empty 'peers' line"
        for v in "$@"; do
            is_uint "$v" && [ "$v" -ge 1 ] && [ "$v" -le 4096 ] || spec_err $lineno "peers: '$v' is not a number of peers (1..4096)"
            case " $peers_list " in *" $v "*) spec_err $lineno "peers: $v given twice" ;; esac
            peers_list="$peers_list $v"
        done
        peers_line=$lineno ;;
    seeds)
        [ -z "$seeds_line" ] || spec_err $lineno "'seeds' given twice (first on line $seeds_line)"
        [ $# -gt 0 ] || spec_err $lineno "empty 'seeds' line: give one or more seeds"
        for v in "$@"; do
            case $v in
            *..*) a=${v%%..*} b=${v#*..}
                is_uint "$a" && is_uint "$b" && [ "$a" -le "$b" ] && [ $((b - a)) -lt 1000 ] ||
                    spec_err $lineno "seeds: '$v' is not a range A..B of seeds (A <= B, at most 1000)" ;;
            *) is_uint "$v" || spec_err $lineno "seeds: '$v' is not a seed (a whole number)"
                a=$v b=$v ;;
            esac
            while [ "$a" -le "$b" ]; do
                case " $seeds_list " in *" $a "*) spec_err $lineno "seeds: seed $a given twice" ;; esac
                seeds_list="$seeds_list $a"
                a=$((a + 1))
            done
        done
        seeds_line=$lineno ;;
    flags) add_flags $lineno "$@" ;;
    axis) [ $# -gt 0 ] || spec_err $lineno "empty 'axis' line: axis --FLAG VALUE..."
        add_axis $lineno "$@" ;;
    lr) add_axis $lineno --lr "$@" ;;
    partition) add_axis $lineno --partition "$@" ;;
    baseline)
        [ -z "$baseline_line" ] || spec_err $lineno "'baseline' given twice (first on line $baseline_line)"
        [ $# -eq 1 ] || spec_err $lineno "baseline: give one setting's name (e.g. complete-16)"
        baseline=$1 baseline_line=$lineno ;;
    *) spec_err $lineno "unknown key '$key' (topology, peers, seeds, flags, axis, lr, partition, baseline)" ;;
    esac
done < "$spec"
[ -n "$topo_line" ] || spec_err0 "no 'topology' line: which topology files?"
[ -n "$seeds_line" ] || spec_err0 "no 'seeds' line: which seeds?"
# An axis the fixed flags also set.
j=0
while [ $j -lt $axis_n ]; do
    eval "af=\$axis_flag_$j al=\$axis_line_$j"
    case $fixed_names in *" $af:"*)
        prev=${fixed_names#*" $af:"}; prev=${prev%% *}
        spec_err "$al" "axis $af is also set in 'flags' (line $prev): one or the other" ;;
    esac
    j=$((j + 1))
done
# The axes in the order of their flags' names: a setting's name then does
# not depend on the order of the spec's lines.
axis_order=$(j=0; while [ $j -lt $axis_n ]; do eval "printf '%s %s\n' \"\$axis_flag_$j\" $j"; j=$((j + 1)); done |
    LC_ALL=C sort | awk '{ print $2 }' | tr '\n' ' ')

plan_tmp=$(mktemp) || die "mktemp failed"
trap 'rm -f "$plan_tmp" "$plan_tmp.err"' EXIT

# The --algo values the topologies are checked with ("-": the fixed flags').
algos=-
j=0
while [ $j -lt $axis_n ]; do
    eval "[ \"\$axis_flag_$j\" = --algo ] && algos=\$axis_vals_$j"
    j=$((j + 1))
done

# Topologies: each file (with '{n}' replaced by each peer count) must exist
# and have the number of peers it is run with. Lines "name<TAB>file<TAB>peers".
topos=''
set -f
for tw in $topo_words; do
    set +f
    case $tw in
    *'{n}'*) [ -n "$peers_list" ] || spec_err $topo_line "topology $tw: '{n}' needs a 'peers' line"
        counts=$peers_list ;;
    *) counts=${peers_list:-any} ;;
    esac
    for c in $counts; do
        f=$(printf '%s' "$tw" | sed "s/{n}/$c/g")
        [ -f "$f" ] && [ -r "$f" ] || spec_err $topo_line "topology file $f does not exist"
        # as run-local.sh checks it (scripts/launch-lib.sh): the file loads,
        # and a W that is column-stochastic only gets --algo pushsum, for
        # the fixed flags and for each value of an --algo axis
        for a in $algos; do
            if [ "$a" = - ]; then set -- $fixed_flags; else set -- $fixed_flags --algo "$a"; fi
            if ! check_topology "$f" '' "$@" 2>"$plan_tmp.err"; then
                why=$(head -n 1 "$plan_tmp.err" | sed 's/^sweep: //; s/^topology //')
                case $why in
                "$f "*) spec_err $topo_line "topology file $f ${why#"$f "}" ;;
                *) spec_err $topo_line "topology file $f: $why" ;;
                esac
            fi
        done
        p=$topo_peers
        [ -n "$p" ] || spec_err $topo_line "topology file $f: murmur topo info gave no peer count"
        if [ "$c" != any ] && [ "$p" != "$c" ]; then
            spec_err $topo_line "topology file $f has $p peers, not $c (the 'peers' line, line $peers_line)"
        fi
        tn=$(basename "$f"); tn=${tn%.topo}
        valid_value "$tn" || spec_err $topo_line "topology file $f: its name may hold only letters, digits and . _ : + - (it names the setting's directory)"
        case "
$topos" in *"
$tn	"*) spec_err $topo_line "two topology files named $tn: rename one (the name is the setting's)" ;; esac
        topos="$topos$tn	$f	$p
"
    done
    set -f
done
set +f

# The settings: every topology x every combination of axis values. A
# combination is written "--flag value --flag value" (axis order).
combos='-'
for j in $axis_order; do
    eval "af=\$axis_flag_$j vals=\$axis_vals_$j"
    nc=''
    for c in $combos; do
        for v in $vals; do
            if [ "$c" = - ]; then nc="$nc $af=$v"; else nc="$nc $c,$af=$v"; fi
        done
    done
    combos=$nc
done

top=$RUNS/$name
{
    printf '# murmur sweep plan 1 (scripts/sweep.sh, docs/sweep.md)\n'
    [ -z "$baseline" ] || printf '# baseline %s\n' "$baseline"
    printf 'index\tsetting\tseed\trun\ttopology\tpeers'
    for j in $axis_order; do eval "printf '\t%s' \"\${axis_flag_$j#--}\""; done
    printf '\tflags\n'
} >"$plan_tmp"
n_runs=0 max_peers=1
for s in $seeds_list; do
    while IFS='	' read -r tn tf tp; do
        [ -n "$tn" ] || continue
        [ "$tp" -gt "$max_peers" ] && max_peers=$tp
        for c in $combos; do
            setting=$tn vals='' aflags=''
            if [ "$c" != - ]; then
                old_ifs=$IFS; IFS=,
                for kv in $c; do
                    k=${kv%%=*} v=${kv#*=}
                    setting="$setting,${k#--}=$v"
                    vals="$vals	$v"
                    aflags="$aflags $k $v"
                done
                IFS=$old_ifs
            fi
            flags="${fixed_flags# }$aflags --seed $s"
            flags=${flags# }
            printf '%d\t%s\t%s\t%s/s%s\t%s\t%s%s\t%s\n' "$n_runs" "$setting" "$s" "$setting" "$s" "$tf" "$tp" "$vals" "$flags" >>"$plan_tmp"
            n_runs=$((n_runs + 1))
        done
    done <<EOF
$topos
EOF
done
if [ -n "$baseline" ]; then
    awk -F'\t' -v b="$baseline" '!/^#/ && h++ && $2 == b { found = 1 } END { exit !found }' "$plan_tmp" ||
        spec_err $baseline_line "baseline: '$baseline' is not one of the settings (--check lists them)"
fi

# Each setting's flags as the node itself reads them: `murmur node
# --dry-run` parses them with its own table and makes its start's checks
# (values, shapes, combinations, the topology for this --algo), so that a
# spec the sweep accepts is one every peer accepts. The first seed's runs
# stand for the others (their flags differ only in --seed).
first_seed=${seeds_list# }; first_seed=${first_seed%% *}
while IFS='	' read -r idx setting seed run tf tp rest; do
    case $idx in ''|*[!0-9]*) continue ;; esac
    [ "$seed" = "$first_seed" ] || continue
    rflags=${rest##*	}
    case " $rflags " in *" --plaintext "*) tls='' ;; *) tls=--plaintext ;; esac
    set -f
    # shellcheck disable=SC2086
    if ! "$MURMUR" node --dry-run $tls --id 0 --n-peers "$tp" --topology "$tf" $rflags \
        >/dev/null 2>"$plan_tmp.err"; then
        set +f
        spec_err0 "setting $setting: murmur node refuses its flags ($rflags): $(sed 's/^murmur node: //' "$plan_tmp.err" | head -n 3)"
    fi
    set +f
done <"$plan_tmp"

# Ports: each run takes the next free block of its peer count from
# base_port, below the kernel's ephemeral range.
eph_lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ $((base_port + max_peers)) -le "$eph_lo" ] ||
    bad "-p $base_port: the runs' ports must stay below the ephemeral range, which starts at $eph_lo (/proc/sys/net/ipv4/ip_local_port_range)"
port_cursor=$base_port
# next_ports COUNT: sets run_port to a free block, moves the cursor past it.
next_ports() {
    np_tries=0
    while :; do
        [ $((port_cursor + $1)) -le "$eph_lo" ] || port_cursor=$base_port
        run_port=$port_cursor
        port_cursor=$((port_cursor + $1))
        ports_busy "$run_port" "$1" || return 0
        np_tries=$((np_tries + 1))
        [ $np_tries -le $(((eph_lo - base_port) / $1 + 1)) ] || die "no $1 free ports between $base_port and $eph_lo"
    done
}

if [ "$check_only" = 1 ]; then
    n_settings=$(awk -F'\t' '!/^#/ && h++ { s[$2] = 1 } END { print length(s) }' "$plan_tmp")
    n_seeds=$(echo $seeds_list | wc -w)
    pl() { [ "$1" = 1 ] && echo "$1 $2" || echo "$1 ${2}s"; }
    echo "sweep: $spec is valid: $(pl $n_settings setting) x $(pl $n_seeds seed) = $(pl $n_runs run) into $top/"
    awk -F'\t' '!/^#/ && h++ { printf "  %-40s seed %-4s %s peers  %s\n", $2, $3, $6, $NF }' "$plan_tmp"
    exit 0
fi

# --- the runs ------------------------------------------------------------
no_space "$top" && exit 1
mkdir -p "$top" || die "cannot create $top"
# One sweep at a time per directory. The lock's descriptor is inherited by
# run-local.sh and its peers: after the sweep is killed, the lock stays
# held until its last run has stopped, so no second sweep moves a run that
# still runs.
exec 9>>"$top/sweep.lock"
flock -n 9 || die "$top is in use: another sweep, or the run of a sweep that was killed, still runs there (fuser $top/sweep.lock)"

# A finished run must have been run with the flags this spec gives it: a
# changed spec extends a sweep, never mixes two experiments in one setting.
while IFS='	' read -r idx setting seed run tf tp rest; do
    case $idx in ''|*[!0-9]*) continue ;; esac
    d=$top/$run
    [ -f "$d/sweep.done" ] || continue
    want=${rest##*	}
    had=$(sed -n 's/^flags //p' "$d/sweep.done")
    [ "$had" = "$want" ] || die "$d was run with other node flags than $spec gives it now:
  then: $had
  now:  $want
use another -r NAME, or remove $d"
done <"$plan_tmp"
cp "$spec" "$top/sweep.spec.tmp" && mv "$top/sweep.spec.tmp" "$top/sweep.spec" || die "cannot write $top/sweep.spec"
cp "$plan_tmp" "$top/sweep.plan.tmp" && mv "$top/sweep.plan.tmp" "$top/sweep.plan" || die "cannot write $top/sweep.plan"

log() { # a line on the terminal and in sweep.log
    echo "sweep: $*"
    printf '%s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"$top/sweep.log"
}
hms() {
    if [ "$1" -ge 3600 ]; then printf '%dh%02dm' $(($1 / 3600)) $(($1 % 3600 / 60))
    elif [ "$1" -ge 60 ]; then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
    else printf '%ds' "$1"; fi
}
marker() { # marker DIR NAME TEXT: DIR/NAME written atomically
    printf '%s\n' "$3" >"$1/$2.tmp" && mv "$1/$2.tmp" "$1/$2"
}
# kept_failed DIR FLAGS: DIR failed before with these very node flags (its
# sweep.failed says which; one written before it did says none: the same)
# and is kept, not rerun (without --retry-failed). A failed run whose
# flags the spec has changed since is a new run.
kept_failed() {
    [ -f "$1/sweep.failed" ] && [ "$retry_failed" = 0 ] || return 1
    kf_had=$(sed -n 's/^flags //p' "$1/sweep.failed")
    [ -z "$kf_had" ] || [ "$kf_had" = "$2" ]
}

# resume_or_move_aside DIR RUN TAG PEERS TOPOLOGY FLAGS: what becomes of
# the directory of a run that is planned again (not done, not a kept
# failure). An interrupted or unfinished run of these very peers, topology
# and flags is continued (sets resume=--resume and wall_before, the
# seconds its earlier attempts took); any other, with --no-resume, or one
# with a peer that has no checkpoint, is moved aside to DIR.attempt-K and
# run again from round 0. Said in the log.
resume_or_move_aside() {
    ra_d=$1 ra_run=$2 ra_tag=$3 ra_tp=$4 ra_tf=$5 ra_flags=$6
    why=unfinished
    [ -f "$ra_d/sweep.interrupted" ] && why=interrupted
    [ -f "$ra_d/sweep.failed" ] && why=failed
    [ -f "$ra_d/sweep.failed" ] && [ "$retry_failed" = 0 ] && why="failed with other node flags ($(sed -n 's/^flags //p' "$ra_d/sweep.failed"))"
    other=''
    set -f
    # shellcheck disable=SC2086
    if [ -f "$ra_d/sweep.failed" ]; then :
    elif [ "$no_resume" = 1 ]; then other='--no-resume'
    else other=$(run_mismatch "$ra_d" "$ra_tp" "$ra_tf" $ra_flags) || resume=--resume; fi
    set +f
    # a peer without a checkpoint would start again from round 0 while the
    # others go on: rerun the whole run from round 0 instead
    ra_fresh=$(peers_without_checkpoint "$ra_d" "$ra_tp")
    if [ -n "$resume" ] && [ -n "$ra_fresh" ] && ran_before "$ra_d" "$ra_tp"; then
        resume=''
        other="peer(s) $ra_fresh have no checkpoint: resumed, they would start again from round 0 while the others go on"
    fi
    if [ -n "$resume" ]; then
        wall_before=$(sed -n 's/^wall //p' "$ra_d/sweep.interrupted" 2>/dev/null)
        wall_before=${wall_before:-0}
        rm -f "$ra_d/sweep.interrupted"
        log "$ra_tag $ra_run: $why before; resumed from its peers' checkpoints (run-local.sh --resume)"
        return 0
    fi
    # why it is not continued, on one line
    [ -z "$other" ] || other=" (not resumed: $(printf '%s' "$other" | tr '\n' ' ' | sed 's/  */ /g; s/ $//'))"
    k=1
    while [ -e "$ra_d.attempt-$k" ]; do k=$((k + 1)); done
    mv "$ra_d" "$ra_d.attempt-$k" || die "cannot move $ra_d aside"
    log "$ra_tag $ra_run: $why before$other; that attempt kept as $ra_d.attempt-$k, run again"
}

# What is left to do.
todo=0 done_before=0 failed_before=0
while IFS='	' read -r idx setting seed run rest; do
    case $idx in ''|*[!0-9]*) continue ;; esac
    d=$top/$run
    if [ -f "$d/sweep.done" ]; then done_before=$((done_before + 1))
    elif kept_failed "$d" "${rest##*	}"; then failed_before=$((failed_before + 1))
    else todo=$((todo + 1)); fi
done <"$top/sweep.plan"
log "$spec: $n_runs runs into $top/ ($done_before finished before, $failed_before failed before and kept, $todo to run)"
[ "$failed_before" -gt 0 ] && log "failed runs are kept; --retry-failed reruns them"

interrupted=0 signals=0 child_pidf=$top/launch.pid
on_signal() {
    signals=$((signals + 1))
    interrupted=1
    [ -s "$child_pidf" ] && kill -TERM "$(cat "$child_pidf")" 2>/dev/null
}
trap on_signal INT TERM HUP
# SIGPIPE (the sweep's output was piped into a reader that has gone, e.g.
# `| head`): stopped as on Ctrl-C, once; output to /dev/null from then on
# (sweep.log keeps the log).
pipe_gone=0
on_pipe() {
    signals=$((signals + 1))
    pipe_gone=$((pipe_gone + 1))
    if [ "$pipe_gone" -gt 1 ]; then exec 2>/dev/null; return; fi
    exec >/dev/null 4>/dev/null
    interrupted=1
    [ -s "$child_pidf" ] && kill -TERM "$(cat "$child_pidf")" 2>/dev/null
}
trap on_pipe PIPE

ran=0 ran_time=0 n_ok=0 n_failed=0 left=$todo disk_full=0
# run-local.sh's output: fd 4, the terminal or (-q) output.log.
if [ "$quiet" = 1 ]; then exec 4>>"$top/output.log"; else exec 4>&1; fi
while IFS='	' read -r idx setting seed run tf tp rest <&3; do
    case $idx in ''|*[!0-9]*) continue ;; esac
    [ "$interrupted" = 1 ] && break
    d=$top/$run
    flags=${rest##*	}
    tag="[$((idx + 1))/$n_runs]"
    [ -f "$d/sweep.done" ] && continue
    kept_failed "$d" "$flags" && continue
    # a full disk: the run is left for the next invocation, not failed
    if no_space "$top"; then
        disk_full=1
        echo "sweep: $tag $run not started: the disk is full; it and the runs after it are left for the next invocation" >&2
        break
    fi
    resume='' wall_before=0
    [ -e "$d" ] && resume_or_move_aside "$d" "$run" "$tag" "$tp" "$tf" "$flags"
    next_ports "$tp"
    log "$tag start $run (topology $tf, $tp peers, ports $run_port..$((run_port + tp - 1)))"
    t0=$(date +%s)
    [ "$quiet" = 1 ] && printf '\n=== %s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$run" >&4
    rm -f "$child_pidf"
    # shellcheck disable=SC2086
    set -f
    setsid -w sh -c 'echo $$ >"$0"; exec "$@"' "$child_pidf" \
        sh "$here/run-local.sh" -n "$tp" -t "$tf" -r "$name/$run" -p "$run_port" -i "$interval" \
        --no-report $resume -- $flags >&4 2>&1 3<&- 4>&- &
    set +f
    bgpid=$!
    # A trapped signal interrupts wait; wait_pid waits again until the run
    # has ended (scripts/launch-lib.sh).
    wait_pid $bgpid
    rc=$st
    # run-local.sh exits 130 when it was interrupted (by us, or by a signal
    # of its own: a SIGPIPE of its output); its peers stopped with their
    # checkpoints: interrupted, not failed
    [ $rc -eq 130 ] && interrupted=1
    rm -f "$child_pidf"
    dt=$(($(date +%s) - t0))
    wall=$((wall_before + dt)) # every attempt the sweep timed
    if [ "$interrupted" = 1 ]; then
        [ -d "$d" ] && marker "$d" sweep.interrupted "interrupted after ${dt}s (run-local.sh exit $rc)
wall $wall
flags $flags"
        log "$tag interrupted $run after $(hms $dt); rerun the same command to continue"
        break
    fi
    ran=$((ran + 1)) ran_time=$((ran_time + dt)) left=$((left - 1))
    status=done
    if [ $rc -ne 0 ]; then
        status="failed: run-local.sh exit $rc"
    elif ! "$MURMUR" report "$d" >"$d/report.txt" 2>&1; then
        status="failed: murmur report (see $d/report.txt)"
    fi
    if [ "$status" = done ]; then
        resumes=''
        [ ! -f "$d/launch/resumes.log" ] || resumes="
resumed $(wc -l <"$d/launch/resumes.log")"
        marker "$d" sweep.done "finished $(date -u +%Y-%m-%dT%H:%M:%SZ) wall $wall
flags $flags$resumes"
        n_ok=$((n_ok + 1))
    else
        [ -d "$d" ] || mkdir -p "$d"
        marker "$d" sweep.failed "$status
flags $flags"
        n_failed=$((n_failed + 1))
    fi
    eta=''
    [ $left -gt 0 ] && eta=", ETA $(hms $((ran_time * left / ran)))"
    log "$tag $( [ "$status" = done ] && echo "done  " || echo "FAILED") $run in $(hms $dt)$( [ "$status" = done ] || echo " ($status)") | $n_ok done, $n_failed failed, $left to go$eta"
done 3<"$top/sweep.plan"
trap - INT TERM HUP

if [ "$interrupted" = 1 ]; then
    log "interrupted: $n_ok runs finished in this invocation, the rest are left for the next"
    exit 130
fi
[ "$disk_full" = 1 ] && exit 1
rc=0
unfinished=$(awk -F'\t' -v top="$top" '!/^#/ && h++ { print top "/" $4 }' "$top/sweep.plan" |
    while IFS= read -r d; do [ -f "$d/sweep.done" ] || echo x; done | wc -l)
[ "$unfinished" -eq 0 ] || { log "$unfinished of $n_runs runs not finished (failed or left): they are excluded from the aggregate"; rc=1; }
if [ "$aggregate" = 1 ]; then
    "$MURMUR" report --sweep "$top" || rc=1
fi
exit $rc
