#!/usr/bin/env python3
"""The tables and the plot of scripts/straggler-study.sh (docs/node.md,
"Uneven peers").

    python3 scripts/straggler-figures.py DIR [--round 150] [--murmur ./murmur]

Reads DIR/SCENARIO/MODE/sSEED (8 peers each) and writes to DIR:

  runs.csv     one line per run: the loss, wall time, wait share and steps at
               --round (150), the consensus distance Xi there (exact, from the
               snapshots, through `murmur report`) and the averaged model's
               loss, the straggler's (peer 3's) weight in the average relative
               to W's, and the time, rounds and steps to the target loss
  table.md     issue 36's table (seed 1), then per scenario and mode the
               figures over the seeds and the paired differences against
               `fixed` (mean, 95 % Student-t interval, seeds)
  loss-time.png  validation loss against wall time, one line per mode, a
               panel per scenario (seed 1), and its gnuplot script

The target of seed s is the loss of its none/fixed run at --round: the
no-straggler D-PSGD run's loss at round 150 (issue 36). Time to target is
interpolated linearly between the two evaluations around it (every 10
rounds), from the peers' own clocks (the slowest peer's time of each
evaluation round); rounds and steps the same way. Wall times depend on the
machine's load (DIR/runs.log records it); rounds and steps to target and the
wait share do not, or much less.
"""
import argparse
import csv
import glob
import json
import math
import os
import statistics
import subprocess
import sys

MODES = ["fixed", "learn", "batch", "steps", "async"]
SCENARIOS = ["none", "slow", "stretch", "jitter"]
STRAGGLER = 3
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def load_peer(path):
    rounds, evals, end = {}, {}, None
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("ev") == "round":
                rounds[r["round"]] = r
            elif r.get("ev") == "eval":
                evals[r["round"]] = r
            elif r.get("ev") == "end":
                end = r
    return rounds, evals, end


def load_run(d):
    peers = {}
    for k in range(8):
        p = os.path.join(d, "node-%d" % k, "metrics.jsonl")
        if not os.path.exists(p):
            return None
        peers[k] = load_peer(p)
    return peers


def eval_curve(peers):
    """(round, wall time, mean val loss, mean steps) of every round all peers evaluated."""
    common = set.intersection(*(set(e) for _, e, _ in peers.values()))
    out = []
    for r in sorted(common):
        ev = [peers[k][1][r] for k in peers]
        out.append((r, max(e["time"] for e in ev), statistics.mean(e["val_loss"] for e in ev),
                    statistics.mean(e["step"] for e in ev)))
    return out


def to_target(curve, target):
    """(time, round, steps) at which the mean loss first reaches target, interpolated."""
    prev = None
    for c in curve:
        if c[2] <= target:
            if prev is None or prev[2] == c[2]:
                return c[1], c[0], c[3]
            f = (prev[2] - target) / (prev[2] - c[2])
            return tuple(prev[i] + f * (c[i] - prev[i]) for i in (1, 0, 3))
        prev = c
    return None


def wait_share(peers, rnd):
    shares = []
    for rounds, _, _ in peers.values():
        r = rounds.get(rnd) or rounds[max(rounds)]
        t = r["t_compute"] + r["t_comm"] + r["t_wait"]
        shares.append(r["t_wait"] / t if t > 0 else float("nan"))
    return statistics.mean(shares)


def straggler_weight(peers, upto):
    """Peer 3's weight in the next average, relative to W's (1: as the file
    says), mean over rounds: (W_33' + sum_i W_i3 [i mixed 3]) with ring
    weights 1/3 and a missing neighbour's weight back to self."""
    tot, n = 0.0, 0
    for r in range(upto):
        col = 0.0
        ok = True
        for k, (rounds, _, _) in peers.items():
            line = rounds.get(r)
            if line is None:
                ok = False
                break
            if k == STRAGGLER:
                col += 1 / 3 + len(line.get("missing", [])) / 3
            elif STRAGGLER in line.get("nbrs", []):
                col += 1 / 3
        if ok:
            tot += col
            n += 1
    return tot / n if n else float("nan")


def report_xi(murmur, d, rnd):
    """Xi (exact) and the averaged model's loss at round rnd, from `murmur report`."""
    out = os.path.join(d, "report.csv")
    try:
        subprocess.run([murmur, "report", d, "--csv", out, "--no-plots"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        return float("nan"), float("nan")
    with open(out) as f:
        for row in csv.DictReader(f):
            if int(row["round"]) == rnd:
                def num(x):
                    try:
                        return float(x)
                    except ValueError:
                        return float("nan")
                return num(row["consensus_exact"]), num(row["avg_val_loss"])
    return float("nan"), float("nan")


def fmt(v, f="%.3f"):
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f % v


def interval(xs):
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return None, None, 0
    m = statistics.mean(xs)
    if len(xs) < 2:
        return m, None, len(xs)
    return m, T95.get(len(xs) - 1, 2.0) * statistics.stdev(xs) / math.sqrt(len(xs)), len(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--round", type=int, default=150)
    ap.add_argument("--murmur", default="./murmur")
    a = ap.parse_args()
    runs = {}
    for d in sorted(glob.glob(os.path.join(a.dir, "*", "*", "s*"))):
        sc, mode, s = d.split(os.sep)[-3:]
        peers = load_run(d)
        if not peers or any(e is None for _, _, e in peers.values()):
            print("straggler-figures: %s is incomplete; left out" % d, file=sys.stderr)
            continue
        runs[(sc, mode, int(s[1:]))] = (d, peers)
    if not runs:
        sys.exit("straggler-figures: no complete run in %s" % a.dir)
    targets = {}
    for (sc, mode, seed), (d, peers) in runs.items():
        if sc == "none" and mode == "fixed":
            c = dict((x[0], x[2]) for x in eval_curve(peers))
            if a.round in c:
                targets[seed] = c[a.round]
    rows = []
    for key in sorted(runs, key=lambda k: (SCENARIOS.index(k[0]), k[2], MODES.index(k[1]))):
        sc, mode, seed = key
        d, peers = runs[key]
        curve = eval_curve(peers)
        at = dict((x[0], x) for x in curve)
        c = at.get(a.round)
        xi, avg_loss = report_xi(a.murmur, d, a.round)
        hit = to_target(curve, targets[seed]) if seed in targets else None
        straggler_time = max(peers[STRAGGLER][1][r]["time"] for r in peers[STRAGGLER][1]
                             if r <= a.round) if peers[STRAGGLER][1] else float("nan")
        rows.append({
            "scenario": sc, "mode": mode, "seed": seed,
            "loss": c[2] if c else float("nan"), "wall": c[1] if c else float("nan"),
            "steps": c[3] if c else float("nan"), "wait": wait_share(peers, a.round - 1),
            "xi": xi, "avg_loss": avg_loss, "w3": straggler_weight(peers, a.round),
            "target": targets.get(seed, float("nan")),
            "t_target": hit[0] if hit else float("nan"), "r_target": hit[1] if hit else float("nan"),
            "s_target": hit[2] if hit else float("nan"), "straggler_wall": straggler_time,
        })
    keys = list(rows[0].keys())
    with open(os.path.join(a.dir, "runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow(r)
    by = dict(((r["scenario"], r["mode"], r["seed"]), r) for r in rows)
    md = []
    md.append("Round %d; target: the none/fixed run's loss at round %d, per seed (%s).\n" % (
        a.round, a.round, ", ".join("s%d %.4f" % (s, t) for s, t in sorted(targets.items()))))
    md.append("### Issue 36's table (seed 1)\n")
    md.append("| run | wall time to round %d (s) | wait %% (mean over peers) | val loss | Xi |" % a.round)
    md.append("| --- | --- | --- | --- | --- |")
    for sc, mode, name in [("none", "fixed", "D-PSGD, no straggler"),
                           ("jitter", "fixed", "D-PSGD, peer 3 longtail:1:0.1"),
                           ("slow", "fixed", "D-PSGD, peer 3 --lab-slow 3:2"),
                           ("none", "async", "async, no straggler"),
                           ("jitter", "async", "async, peer 3 longtail:1:0.1")]:
        r = by.get((sc, mode, 1))
        if r:
            md.append("| %s | %s (peer 3: %s) | %s | %s | %s |" % (
                name, fmt(r["wall"], "%.1f"), fmt(r["straggler_wall"], "%.1f"),
                fmt(100 * r["wait"], "%.1f"), fmt(r["loss"], "%.4f"), fmt(r["xi"], "%.3f")))
    for sc in SCENARIOS:
        modes = [m for m in MODES if any(k[0] == sc and k[1] == m for k in by)]
        if not modes:
            continue
        md.append("\n### Scenario %s\n" % sc)
        md.append("| mode | seeds | loss @%d | wall @%d (s) | wait %% | Xi @%d | avg model loss | peer 3's weight | time to target (s) | rounds to target | steps to target | time vs fixed (s, 95 %% CI) | rounds vs fixed |" % (a.round, a.round, a.round))
        md.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for m in modes:
            rs = [by[k] for k in sorted(by) if k[0] == sc and k[1] == m]
            def col(name, scale=1.0, f="%.3f"):
                mean, half, n = interval([r[name] * scale for r in rs])
                if mean is None:
                    return "—"
                return (f % mean) + ("" if half is None else " ± " + (f % half))
            def diff(name):
                ds = []
                for r in rs:
                    b = by.get((sc, "fixed", r["seed"]))
                    if b and not math.isnan(r[name]) and not math.isnan(b[name]):
                        ds.append(r[name] - b[name])
                mean, half, n = interval(ds)
                if mean is None or m == "fixed":
                    return "—"
                return "%+.1f%s (%s)" % (mean, "" if half is None else " ± %.1f" % half,
                                          ", ".join("%+.1f" % x for x in ds))
            missed = sum(1 for r in rs if math.isnan(r["t_target"]))
            md.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s%s | %s | %s | %s | %s |" % (
                m, len(rs), col("loss", f="%.4f"), col("wall", f="%.1f"), col("wait", 100, "%.1f"),
                col("xi"), col("avg_loss", f="%.4f"), col("w3", f="%.3f"), col("t_target", f="%.1f"),
                "" if not missed else " (%d not reached)" % missed, col("r_target", f="%.1f"),
                col("s_target", f="%.1f"), diff("t_target"), diff("r_target")))
    with open(os.path.join(a.dir, "table.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    plot(a.dir, runs)


def plot(out, runs):
    scen = [s for s in SCENARIOS if any(k[0] == s and k[2] == 1 for k in runs)]
    if not scen:
        return
    datas = []
    for sc in scen:
        for m in MODES:
            if (sc, m, 1) not in runs:
                continue
            p = os.path.join(out, "curve-%s-%s.dat" % (sc, m))
            with open(p, "w") as f:
                for r, t, l, s in eval_curve(runs[(sc, m, 1)][1]):
                    f.write("%g %g %d\n" % (t, l, r))
            datas.append((sc, m, p))
    gp = os.path.join(out, "loss-time.gp")
    with open(gp, "w") as f:
        f.write("set terminal pngcairo size %d,480\nset output '%s'\n" % (
            520 * len(scen), os.path.join(out, "loss-time.png")))
        f.write("set multiplot layout 1,%d\nset grid\nset key top right\n" % len(scen))
        f.write("set xlabel 'wall time (s)'\nset ylabel 'validation loss (mean over peers)'\n")
        f.write("set yrange [2.5:3.2]\n")
        for sc in scen:
            parts = ["'%s' using 1:2 with linespoints title '%s'" % (p, m)
                     for s, m, p in datas if s == sc]
            f.write("set title 'seed 1, %s'\nplot %s\n" % (sc, ", ".join(parts)))
        f.write("unset multiplot\n")
    try:
        subprocess.run(["gnuplot", gp], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("straggler-figures: gnuplot: %s" % e, file=sys.stderr)


if __name__ == "__main__":
    main()
