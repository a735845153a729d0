#!/usr/bin/env python3
"""Locates the critical consensus distance of a study (docs/study.md).

  scripts/critical-distance.py [--baseline SETTING] [--exclude TEXT]...
                               [--metric acc|val_loss] [--boot N] [--dat FILE]
                               SWEEP-RUNS.CSV

SWEEP-RUNS.CSV is the per-run table `murmur report --sweep ... --csv FILE`
writes beside FILE (sweep-runs.csv). Every finished run of a setting other
than the baseline (default complete-16) whose seed the baseline also
finished gives one point: u = log10 of the run's own consensus distance
averaged over the run (consensus_avg), d = its metric minus the baseline's
of the same seed. Settings whose name contains an --exclude TEXT are left
out (a schedule's averaged distance does not describe it).

The model is Kong et al.'s shape, flat below a critical distance c and
linear in log distance above it:  d = a + b * max(0, u - log10 c).
For each c on a grid (400 steps over the points' range of u) a and b are
the least-squares fit; c is the one with the smallest residual sum of
squares RSS. Two 95 % intervals for c, both printed:
  * profile: every c with RSS(c) <= RSS_min * (1 + t^2 / (n - 3)), t the
    0.975 quantile of Student's t with n - 3 degrees of freedom (the F test
    of one parameter; for a change point only approximate);
  * bootstrap over seeds: seeds drawn with replacement (the seed is the unit
    that is repeated: a seed's runs share the initialisation and batches),
    every point of a drawn seed taken as often as it was drawn, refitted;
    the 2.5 and 97.5 percentiles of c (with 5 seeds there are only 126
    distinct draws: a coarse interval).
An interval that reaches the grid's end means the data do not bound c on
that side. --dat FILE writes the points and the fitted curve for gnuplot.
Only the Python standard library; a fixed bootstrap seed (1), so the same
CSV gives the same figures.
"""
import argparse
import csv
import math
import random
import sys


def t975(df):
    """Student's t 0.975 quantile (Cornish-Fisher in 1/df; < 3e-4 off for df >= 5)."""
    z = 1.959963984540054
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4


def read_runs(path, metric):
    """(setting, seed) -> (metric, consensus_avg) of the finished runs."""
    runs = {}
    try:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["status"] != "done" or not r[metric] or not r["consensus_avg"]:
                    continue
                runs[(r["setting"], r["seed"])] = (float(r[metric]), float(r["consensus_avg"]))
    except OSError as e:
        sys.exit("critical-distance: %s: %s" % (path, e.strerror))
    except (KeyError, ValueError) as e:
        sys.exit("critical-distance: %s is not a sweep-runs.csv of murmur report --sweep "
                 "(%s: %s)" % (path, type(e).__name__, e))
    return runs


def read_points(path, baseline, exclude, metric):
    runs = read_runs(path, metric)
    base = {seed: v for (s, seed), v in runs.items() if s == baseline}
    if not base:
        sys.exit("critical-distance: no finished run of the baseline '%s' in %s" % (baseline, path))
    pts = []  # (seed, setting, u, d)
    for (s, seed), (m, x) in sorted(runs.items()):
        if s == baseline or seed not in base or any(e in s for e in exclude):
            continue
        if x <= 0:
            continue
        pts.append((seed, s, math.log10(x), m - base[seed][0]))
    return pts


def fit_at(pts, uc):
    """Least squares of d = a + b * max(0, u - uc); returns (rss, a, b)."""
    n = len(pts)
    h = [max(0.0, u - uc) for _, _, u, _ in pts]
    d = [p[3] for p in pts]
    sh, sd = sum(h), sum(d)
    shh = sum(v * v for v in h)
    shd = sum(v * w for v, w in zip(h, d))
    det = n * shh - sh * sh
    if det <= 1e-12:  # no point above uc: flat only
        a, b = sd / n, 0.0
    else:
        b = (n * shd - sh * sd) / det
        a = (sd - b * sh) / n
    rss = sum((w - a - b * v) ** 2 for v, w in zip(h, d))
    return rss, a, b


def best(pts, grid):
    fits = [(fit_at(pts, uc), uc) for uc in grid]
    (rss, a, b), uc = min(fits, key=lambda f: f[0][0])
    return rss, a, b, uc, fits


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--baseline", default="complete-16")
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("--metric", default="acc", choices=["acc", "val_loss"])
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--dat")
    o = ap.parse_args()
    pts = read_points(o.csv, o.baseline, o.exclude, o.metric)
    n = len(pts)
    if n < 5:
        sys.exit("critical-distance: %d points, need at least 5" % n)
    us = [p[2] for p in pts]
    lo, hi = min(us), max(us)
    grid = [lo + (hi - lo) * i / 400 for i in range(401)]
    rss, a, b, uc, fits = best(pts, grid)
    lim = rss * (1 + t975(n - 3) ** 2 / (n - 3))
    inside = [g for (r, _, _), g in fits if r <= lim]
    rng = random.Random(1)
    seeds = sorted({p[0] for p in pts})
    boot = []
    for _ in range(o.boot):
        draw = [rng.choice(seeds) for _ in seeds]
        bp = [p for s in draw for p in pts if p[0] == s]
        if len({p[1] for p in bp}) >= 3:
            boot.append(best(bp, grid)[3])
    boot.sort()
    q = lambda f: boot[min(len(boot) - 1, int(f * len(boot)))]
    print("points: %d (%d settings, seeds %s) paired against %s, metric %s%s"
          % (n, len({p[1] for p in pts}), " ".join(seeds), o.baseline, o.metric,
             "; excluded: " + ", ".join(o.exclude) if o.exclude else ""))
    print("grid: averaged Xi %.3g .. %.3g" % (10 ** lo, 10 ** hi))
    print("fit: d = %+.4f %+.4f * max(0, log10 Xi - log10 c), c = %.3g, RSS %.3g, "
          "residual sd %.4f" % (a, b, 10 ** uc, rss, math.sqrt(rss / (n - 3))))
    print("95 %% profile interval of c: [%.3g, %.3g]%s"
          % (10 ** min(inside), 10 ** max(inside),
             " (reaches the grid's end)" if min(inside) == lo or max(inside) == hi else ""))
    print("95 %% seed-bootstrap interval of c: [%.3g, %.3g] (%d resamples, median %.3g)"
          % (10 ** q(0.025), 10 ** q(0.975), len(boot), 10 ** q(0.5)))
    if o.dat:
        with open(o.dat, "w") as f:
            f.write("# critical-distance.py %s: points then the fit (blank lines between)\n"
                    "# Xi_avg d setting seed\n" % o.csv)
            for seed, s, u, d in pts:
                f.write("%.6g %.6g \"%s\" %s\n" % (10 ** u, d, s, seed))
            f.write("\n\n# Xi_avg fitted_d\n")
            for g in sorted(grid[::8] + [uc]):
                f.write("%.6g %.6g\n" % (10 ** g, a + b * max(0.0, g - uc)))


if __name__ == "__main__":
    main()
