#!/bin/sh
# make bench-allreduce: Open MPI's MPI_Allreduce over TCP (--mca pml ob1
# --mca btl tcp,self: no shared memory even on one machine) next to murmur's
# own ring all-reduce (murmur node --algo allreduce --no-train --vector-len,
# plaintext, over loopback) for 1, 4, 16 and 64 MB float vectors on 4 and 8
# peers of this machine (tests/bench_allreduce.c for MPI).
# The machine may be shared, so the two run in turn: a pair is one MPI run
# and one murmur run of the same cell (peers, size) back to back, MPI first
# in odd passes and murmur first in even ones (A B, B A, ...). The
# benchmark makes PASSES passes over all the cells, one pair per cell per
# pass, so that every cell's pairs are spread over the whole invocation and
# see the same mix of the machine's load as every other cell's. A run is
# REPS timed repetitions after max(1, REPS/10) warm-up ones (left out); REPS
# is chosen per cell so that a run takes about SECONDS on a quiet machine
# here (a nominal 1200/peers MB/s, at least MIN_REPS), because a run of a
# few milliseconds measures one scheduling state of 4-8 processes on 2
# cores, not the all-reduce. A pair's ratio is murmur's median algorithm
# bandwidth (vector bytes / seconds of one all-reduce, slowest peer;
# docs/runtime.md) over MPI's median in the same pair. The table prints,
# per cell, each side's median of its runs' medians with their range, the
# median of the pair ratios with a 95 % bootstrap interval (1000
# resamples of the pairs, fixed seed) and their range, the CPU that other,
# niced processes took meanwhile (cores, from /proc/stat's nice column:
# the benchmark itself runs at nice 0) and the 1-min load average over
# the cell's runs. Writes every repetition to the CSV, every run to
# CSV.runs; draws a PNG when gnuplot is there.
#   BENCH_RANKS="4 8"  BENCH_SIZES=1,4,16,64  BENCH_PASSES=6
#   BENCH_SECONDS=0.75 (nominal timed seconds per run)  BENCH_MIN_REPS=4
#   BENCH_REPS (a fixed count instead)  BENCH_CSV=build/bench-allreduce.csv
#   BENCH_IMPLS="mpi murmur"  BENCH_CHUNK=65536 (--allreduce-chunk, floats)
#   BENCH_IMPLS="mpi murmur base" BENCH_BASE=path/to/murmur: a second murmur
#   binary (e.g. main's) in the same passes, for a before/after comparison
#   at the same load: tables for each impl against the first, and murmur/base.
#   BENCH_IMPLS="mpi ring halving": murmur with --allreduce-schedule ring
#   and halving (murmur alone is auto), and a table of halving/ring.
# MPI's run also stops once its timed repetitions pass 4 x SECONDS
# (bench_allreduce --max-seconds), so a busy machine bounds the run's time.
# murmur's repetitions are rounds of one run: WARM + REPS + 2 rounds, the
# first round (connections opening) and the warm-up ones left out; a
# repetition's time is the largest over the peers of the time between two
# consecutive round lines of metrics.jsonl (docs/metrics.md): one whole
# all-reduce and the round's book-keeping, back to back, as an application
# would call it.
# The CSV is long-format (impl,ranks,vector_mb,bytes,pair,rep,seconds,
# algbw_gbs,busbw_gbs): one row per timed repetition and implementation;
# CSV.runs has one row per run (impl,ranks,vector_mb,pair,reps,start_s,
# wall_s,nice_cores,load1): start_s from the invocation's start.
#   scripts/bench-allreduce.sh --compare A.csv B.csv ...: each cell's
# median ratio in every invocation and their spread (max/min - 1).
set -eu
case ${1:-} in -h|--help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
BUILD=${BUILD:-build}
MURMUR=${MURMUR:-./murmur}
BASE=${BENCH_BASE:-}
IMPLS=${BENCH_IMPLS:-mpi murmur}
CHUNK=${BENCH_CHUNK:-65536}
BIN=${BIN:-$BUILD/bench_allreduce}
RANKS=${BENCH_RANKS:-4 8}
SIZES=${BENCH_SIZES:-1,4,16,64}
PASSES=${BENCH_PASSES:-6}
BUDGET=${BENCH_SECONDS:-0.75}
MIN_REPS=${BENCH_MIN_REPS:-4}
CSV=${BENCH_CSV:-$BUILD/bench-allreduce.csv}
RUNS="$CSV.runs"

# cell_stats CSV A B: one line per cell (peers, size), in order of first
# appearance: ranks mb, then for A and for B the median of its runs' medians
# and their min and max, then the median of the pairs' ratios B/A (percent),
# its 95 % bootstrap interval, the ratios' min and max and their count; "-"
# where a side is missing.
cell_stats() {
    awk -F, -v A="$2" -v B="$3" '
    function isort(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
    function median(a, n) { isort(a, n); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    BEGIN { impls[1] = A; impls[2] = B }
    FNR > 1 { k = $2 " " $3; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
              if ($1 != A && $1 != B) next
              r = k SUBSEP $1 SUBSEP $5; v[r, ++rn[r]] = $8; if ($5 > np[k]) np[k] = $5 }
    END {
        srand(1)
        for (q = 1; q <= nk; q++) {
            k = keys[q]; line = k
            for (s = 1; s <= 2; s++) { nb = 0; split("", b)
                for (p = 0; p <= np[k]; p++) { r = k SUBSEP impls[s] SUBSEP p
                    if (!rn[r]) continue
                    split("", a); for (i = 1; i <= rn[r]; i++) a[i] = v[r, i]
                    m[s, p] = median(a, rn[r]); b[++nb] = m[s, p] }
                if (nb) { med = median(b, nb); line = line sprintf(" %.4f %.4f %.4f", med, b[1], b[nb]) }
                else line = line " - - -" }
            nr = 0; split("", rr)
            for (p = 0; p <= np[k]; p++)
                if ((1, p) in m && (2, p) in m && m[1, p] > 0) rr[++nr] = 100 * m[2, p] / m[1, p]
            if (nr) {
                for (bt = 1; bt <= 1000; bt++) { split("", t)
                    for (i = 1; i <= nr; i++) t[i] = rr[int(rand() * nr) + 1]
                    bm[bt] = median(t, nr) }
                isort(bm, 1000)
                rm = median(rr, nr)
                line = line sprintf(" %.1f %.1f %.1f %.1f %.1f %d", rm, bm[26], bm[975], rr[1], rr[nr], nr)
            } else line = line " - - - - - 0"
            split("", m); print line
        }
    }' "$1"
}

if [ "${1:-}" = --compare ]; then
    shift
    [ $# -ge 2 ] || { echo "usage: bench-allreduce.sh --compare A.csv B.csv ..." >&2; exit 2; }
    echo "median pair ratio ${CMP_B:-murmur}/${CMP_A:-mpi} per invocation (CMP_A, CMP_B: other impls);" \
         "spread = max/min - 1 over the invocations"
    i=0
    for f in "$@"; do i=$((i + 1)); cell_stats "$f" "${CMP_A:-mpi}" "${CMP_B:-murmur}" | sed "s/^/$i /"; done |
    awk -v ninv=$# '{ k = $2 " " $3; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }; r[k, $1] = $10 }
        END { printf "%5s %7s", "peers", "vector"; for (i = 1; i <= ninv; i++) printf "  %7s", "run " i; printf "  %s\n", "spread"
              for (q = 1; q <= nk; q++) { k = keys[q]; split(k, f, " "); lo = ""; hi = ""
                  printf "%5s %4s MB", f[1], f[2]
                  for (i = 1; i <= ninv; i++) { x = r[k, i]; printf "  %6s%%", x
                      if (x != "-" && x != "") { if (lo == "" || x + 0 < lo) lo = x + 0; if (hi == "" || x + 0 > hi) hi = x + 0 } }
                  if (lo != "" && lo > 0) printf "  %4.0f%%%s\n", 100 * (hi / lo - 1), hi / lo <= 1.1 / 0.9 ? "" : "  (wider than +-10 %)"
                  else printf "  -\n" } }'
    exit 0
fi

[ -x "$BIN" ] || { echo "bench-allreduce: $BIN not built (make bench-allreduce)" >&2; exit 2; }
case " $IMPLS " in *" base "*) [ -x "$BASE" ] || { echo "bench-allreduce: impl base needs BENCH_BASE=a murmur binary" >&2; exit 2; } ;; esac
asroot=""; [ "$(id -u)" = 0 ] && asroot=--allow-run-as-root
echo "impl,ranks,vector_mb,bytes,pair,rep,seconds,algbw_gbs,busbw_gbs" > "$CSV"
echo "impl,ranks,vector_mb,pair,reps,start_s,wall_s,nice_cores,load1" > "$RUNS"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
t_start=$(date +%s.%N)
echo "bench-allreduce: MPI_Allreduce (sum, float, in place) and murmur node --algo allreduce" \
     "(average, plaintext, chunks of $CHUNK floats) over TCP loopback;" \
     "peers: $RANKS; sizes: $SIZES MB; $PASSES passes of one pair (A B, then B A) per cell," \
     "runs of ${BENCH_REPS:-~$BUDGET s of} repetitions after a tenth as many warm-up ones;" \
     "$(nproc) cores; load $load0"

# reps N MB: timed repetitions per run of a cell
reps_for() {
    if [ -n "${BENCH_REPS:-}" ]; then echo "$BENCH_REPS"; return; fi
    awk -v s="$BUDGET" -v n="$1" -v mb="$2" -v lo="$MIN_REPS" \
        'BEGIN { r = int(s * 1200 / n / mb + 0.999); print r < lo ? lo : r }'
}

# A base port with n free ports above it, below the ephemeral range.
free_base() {
    lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        b=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % (lo - 20100 - $1) ))
        busy=$(ss -Htan 2>/dev/null | awk -v b="$b" -v n="$1" '{ sub(/.*:/, "", $4); if ($4 >= b && $4 < b + n) c++ } END { print c + 0 }')
        [ "$busy" -eq 0 ] && { echo "$b"; return 0; }
    done
    echo "bench-allreduce: no free ports" >&2; exit 1
}

# murmur BINARY IMPL N MB PAIR REPS WARM SCHEDULE: one run of N peers; each
# round line's time minus the previous one's, per peer; a repetition is
# the slowest peer's; CSV rows named IMPL.
run_murmur() {
    mbin=$1 name=$2 n=$3 mb=$4 pair=$5 reps=$6 warm=$7 sched=$8
    topo="$BUILD/bench-allreduce-ring$n.topo"
    [ -s "$topo" ] || "$mbin" topo gen ring -n "$n" > "$topo" 2>/dev/null
    len=$((mb * 262144)); dir="$BUILD/bench-allreduce-run/$n-$mb"; rm -rf "$dir"; mkdir -p "$dir"
    port=$(free_base "$n"); pids=""; k=0
    while [ "$k" -lt "$n" ]; do
        MURMUR_NO_BLAS_FIX=1 timeout -k 5 600 "$mbin" node --id "$k" --topology "$topo" \
            --base-port "$port" --plaintext --algo allreduce --allreduce-chunk "$CHUNK" \
            ${sched:+--allreduce-schedule "$sched"} \
            --no-train --vector-len "$len" --rounds $((warm + reps + 2)) --eval-every 0 \
            --checkpoint-every 0 --log-every 0 --start-timeout 60000 --round-timeout 60000 \
            --run-dir "$dir" > "$dir.$k.log" 2>&1 &
        pids="$pids $!"; k=$((k + 1))
    done
    for p in $pids; do wait "$p" || { tail -5 "$dir.0.log" >&2; echo "bench-allreduce: murmur node failed" >&2; exit 1; }; done
    k=0
    while [ "$k" -lt "$n" ]; do
        grep '"ev":"round"' "$dir/node-$k/metrics.jsonl" | sed 's/.*"round":\([0-9]*\).*"time":\([0-9.e+-]*\).*/\1 \2/'
        k=$((k + 1))
    done | awk -v name="$name" -v n="$n" -v mb="$mb" -v reps="$reps" -v warm="$warm" -v pair="$pair" '
        { t[$1, ++c[$1]] = $2 }
        END { for (r = warm + 2; r <= warm + reps + 1; r++) { w = 0
                for (k = 1; k <= n; k++) { d = t[r, k] - t[r - 1, k]; if (d > w) w = d }
                # (peer order within a round is the order of the files: the same k)
                b = mb * 1048576; alg = b / w / 1e9
                printf "%s,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f\n", name, n, mb, b, pair, r - warm - 2, w, alg, alg * 2 * (n - 1) / n } }' >> "$CSV"
}

# mpi N MB PAIR REPS WARM: one mpirun of N ranks on one size
run_mpi() {
    log="$BUILD/bench-allreduce-$1.log"
    timeout -k 10 900 mpirun $asroot --oversubscribe -np "$1" --mca pml ob1 --mca btl tcp,self \
        --mca btl_tcp_if_include lo "$BIN" --sizes "$2" --reps "$4" --warmup "$5" --pair "$3" \
        --max-seconds "$(awk -v s="$BUDGET" 'BEGIN { print 4 * s }')" --csv "$CSV" > "$log" 2>&1 ||
        { tail -20 "$log" >&2; echo "bench-allreduce: mpirun -np $1 failed" >&2; exit 1; }
}

# "total nice" jiffies of all CPUs so far (/proc/stat's cpu line)
cpu_jiffies() { awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print t, $3; exit }' /proc/stat; }

# run IMPL N MB PAIR: one run, and its row of CSV.runs
run_one() {
    impl=$1 n=$2 mb=$3 pair=$4
    reps=$(reps_for "$n" "$mb"); warm=$(( reps / 10 > 1 ? reps / 10 : 1 ))
    j0=$(cpu_jiffies); t0=$(date +%s.%N)
    case $impl in
    mpi) run_mpi "$n" "$mb" "$pair" "$reps" "$warm" ;;
    murmur) run_murmur "$MURMUR" murmur "$n" "$mb" "$pair" "$reps" "$warm" "" ;;
    ring|halving) run_murmur "$MURMUR" "$impl" "$n" "$mb" "$pair" "$reps" "$warm" "$impl" ;;
    base) run_murmur "$BASE" base "$n" "$mb" "$pair" "$reps" "$warm" "" ;;
    *) echo "bench-allreduce: unknown impl '$impl' (mpi, murmur, ring, halving, base)" >&2; exit 2 ;;
    esac
    t1=$(date +%s.%N); j1=$(cpu_jiffies)
    echo "$j0 $j1 $t0 $t1" | awk -v impl="$impl" -v n="$n" -v mb="$mb" -v pair="$pair" -v reps="$reps" \
        -v ts="$t_start" -v cpus="$(nproc)" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
        '{ dt = $3 - $1; printf "%s,%d,%d,%d,%d,%.2f,%.3f,%.2f,%s\n", impl, n, mb, pair, reps, $5 - ts, $6 - $5, (dt > 0 ? cpus * ($4 - $2) / dt : 0), l }' >> "$RUNS"
}

reversed=""; for impl in $IMPLS; do reversed="$impl $reversed"; done
pass=1
while [ "$pass" -le "$PASSES" ]; do
    order=$IMPLS; [ $((pass % 2)) -eq 0 ] && order=$reversed
    for n in $RANKS; do
        for mb in $(echo "$SIZES" | tr ',' ' '); do
            for impl in $order; do run_one "$impl" "$n" "$mb" "$pass"; done
        done
    done
    echo "  pass $pass of $PASSES done at $(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }') s (load $(cut -d' ' -f1-3 /proc/loadavg))"
    pass=$((pass + 1))
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "algorithm bandwidth, GB/s: median (min-max) of each side's $PASSES runs' medians;" \
     "ratio: median of the $PASSES pairs' ratios [95 % bootstrap interval] (min-max);" \
     "niced: cores other (niced) processes took during the cell's runs, mean (max);" \
     "load (1 min) over the cell's runs; load $load0 before, $load1 after"
# report A B: the table of B against A, cell by cell
report() {
    cell_stats "$CSV" "$1" "$2" | awk -v i1="$1" -v i2="$2" '
    FILENAME == ARGV[1] { if (FNR == 1) next; split($0, f, ","); k = f[2] " " f[3]
        w[k] += f[7]; nw[k] += f[7] * f[8]; if (f[8] > nmax[k]) nmax[k] = f[8]
        if (!(k in llo) || f[9] < llo[k]) llo[k] = f[9]; if (f[9] > lhi[k]) lhi[k] = f[9]; next }
    FNR == 1 { printf "%5s %7s  %-21s  %-21s  %-30s  %-11s  %s\n", "peers", "vector", i1, i2, i2 "/" i1 " by pair", "niced", "load" }
    { k = $1 " " $2
      printf "%5s %4s MB", $1, $2
      for (s = 0; s < 2; s++) { o = 3 + 3 * s
          if ($o == "-") printf "  %-21s", "-"; else printf "  %-21s", sprintf("%.3f (%.3f-%.3f)", $o, $(o + 1), $(o + 2)) }
      if ($9 == "-") printf "  %-30s", "-"
      else printf "  %-30s", sprintf("%.0f%% [%.0f-%.0f] (%.0f-%.0f%%)", $9, $10, $11, $12, $13)
      printf "  %-11s  %s-%s\n", (w[k] > 0 ? sprintf("%.2f (%.2f)", nw[k] / w[k], nmax[k]) : "-"), llo[k], lhi[k] }' "$RUNS" -
}
first=${IMPLS%% *}
for impl in ${IMPLS#"$first"}; do report "$first" "$impl"; echo; done
case " $IMPLS " in *" base "*) case " $IMPLS " in *" murmur "*) report base murmur; echo ;; esac ;; esac
case " $IMPLS " in *" ring "*) case " $IMPLS " in *" halving "*) report ring halving; echo ;; esac ;; esac
echo "every repetition: $CSV; every run: $RUNS"
if command -v gnuplot > /dev/null 2>&1; then
    png=${CSV%.csv}.png
    plots=""; pt=5
    for impl in $IMPLS; do
        for n in $RANKS; do
            name=$impl; [ "$impl" = mpi ] && name=MPI_Allreduce; [ "$impl" = murmur ] && name="murmur allreduce"
            plots="$plots${plots:+, }'$CSV' using (strcol(1) eq '$impl' && \$2 == $n ? \$3 : 1/0):8 with points pt $pt title '$name, $n peers'"
            pt=$((pt + 1))
        done
    done
    gnuplot -e "set terminal png noenhanced size 800,500; set output '$png'; set datafile separator ',';
        set logscale x 2; set xlabel 'vector (MB)'; set ylabel 'algorithm bandwidth (GB/s)';
        set key below; set title 'all-reduce over TCP loopback (load $load0)'; plot $plots" 2>/dev/null &&
        echo "plot: $png"
fi
