/* Paired comparisons of a sweep's settings against a baseline setting:
 * runs of the same seed share the initialisation and the batches, so the
 * seed-to-seed spread cancels in their difference (docs/sweep.md, "Paired
 * comparisons"). The statistics, the pairing by seed, and the table. */
#include "report/sweep.h"
#include "report/report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double mm_t975(int df)
{
    /* t(0.975, df), df = 1..30 (from the t distribution's CDF, 6 decimals) */
    static const double tab[30] = {
        12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
        2.262157,  2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
        2.109816,  2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
        2.059539,  2.055529, 2.051831, 2.048407, 2.045230, 2.042272};
    if (df < 1)
        return NAN;
    if (df <= 30)
        return tab[df - 1];
    /* Cornish-Fisher expansion of the t quantile in 1/df around the
     * normal's z = 1.959964 (Abramowitz & Stegun 26.7.5): within 3e-8
     * of the exact value at df = 31, closer beyond. */
    const double z = 1.959963984540054, v = df;
    double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
    return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
           (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v) +
           (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * v * v * v * v);
}

void mm_sweep_paired_of(const double *a, const double *b, int count, mm_sweep_paired *p)
{
    *p = (mm_sweep_paired){.mean = NAN, .sd = NAN, .lo = NAN, .hi = NAN};
    double *d = calloc((size_t)(count > 0 ? count : 1), sizeof *d);
    if (!d)
        abort();
    int n = 0;
    for (int i = 0; i < count; i++)
        if (isfinite(a[i]) && isfinite(b[i])) {
            d[n] = a[i] - b[i];
            p->n_pos += d[n] > 0;
            p->n_neg += d[n] < 0;
            n++;
        }
    mm_sweep_stat st;
    mm_sweep_stat_of(d, n, &st);
    free(d);
    p->n = n;
    p->mean = st.mean;
    p->sd = st.sd;
    if (n >= 2) {
        double half = mm_t975(n - 1) * st.sd / sqrt(n);
        p->lo = st.mean - half;
        p->hi = st.mean + half;
    }
}

/* The finished run of setting si with this seed, or NULL. */
static const mm_sweep_run *done_run(const mm_sweep *s, int si, int64_t seed)
{
    for (int i = 0; i < s->n_runs; i++) {
        const mm_sweep_run *u = &s->runs[i];
        if (u->setting_idx == si && u->seed == seed && u->status == MM_SWEEP_DONE)
            return u;
    }
    return NULL;
}

int mm_sweep_paired_seeds(const mm_sweep *s, int si, int64_t *seeds)
{
    int n = 0;
    if (s->baseline < 0)
        return 0;
    for (int i = 0; i < s->n_runs; i++) {
        const mm_sweep_run *u = &s->runs[i];
        if (u->setting_idx == si && u->status == MM_SWEEP_DONE &&
            done_run(s, s->baseline, u->seed))
            seeds[n++] = u->seed;
    }
    return n;
}

int mm_sweep_set_baseline(mm_sweep *s, const char *name, char *err, size_t errlen)
{
    int b = -1;
    for (int i = 0; i < s->n_settings && b < 0; i++)
        if (!strcmp(s->settings[i].name, name))
            b = i;
    if (b < 0) {
        snprintf(err, errlen, "baseline '%s' is not a setting of %s (the plan's settings: %s%s)",
                 name, s->dir, s->n_settings ? s->settings[0].name : "none",
                 s->n_settings > 1 ? ", ..." : "");
        return -1;
    }
    s->baseline = b;
    size_t cap = (size_t)(s->n_runs ? s->n_runs : 1);
    int64_t *seeds = malloc(cap * sizeof *seeds);
    double *a = malloc(2 * cap * sizeof *a), *z = malloc(2 * cap * sizeof *z);
    if (!seeds || !a || !z)
        abort();
    for (int si = 0; si < s->n_settings; si++) {
        mm_sweep_setting *g = &s->settings[si];
        int n = mm_sweep_paired_seeds(s, si, seeds);
        for (int k = 0; k < n; k++) {
            const mm_sweep_run *u = done_run(s, si, seeds[k]), *v = done_run(s, b, seeds[k]);
            a[k] = u->acc;
            z[k] = v->acc;
            a[cap + k] = u->vloss;
            z[cap + k] = v->vloss;
        }
        g->n_paired = n;
        mm_sweep_paired_of(a, z, n, &g->d_acc);
        mm_sweep_paired_of(a + cap, z + cap, n, &g->d_vloss);
    }
    free(seeds);
    free(a);
    free(z);
    return 0;
}

/* "+m±sd" (or "+m" with one pair, "-" with none) and "[lo, hi]". */
static void d_cells(char *pm, char *ci, size_t len, const mm_sweep_paired *p)
{
    if (p->n == 0) {
        snprintf(pm, len, "-");
        snprintf(ci, len, "-");
    } else if (p->n == 1) {
        snprintf(pm, len, "%+.4f", p->mean);
        snprintf(ci, len, "-");
    } else {
        snprintf(pm, len, "%+.4f±%.4f", p->mean, p->sd);
        snprintf(ci, len, "[%+.4f, %+.4f]", p->lo, p->hi);
    }
}

void mm_sweep_print_paired(const mm_sweep *s, FILE *out)
{
    if (s->baseline < 0)
        return;
    int w = 7;
    for (int i = 0; i < s->n_settings; i++) {
        int l = (int)strlen(s->settings[i].name);
        w = l > w ? l : w;
    }
    fprintf(out, "\npaired against %s (d = setting - baseline, seed by seed):\n",
            s->settings[s->baseline].name);
    fprintf(out, "%-*s %5s %16s %20s %5s %16s %20s %5s\n", w, "setting", "pairs", "d_acc",
            "95% t interval", "+/-", "d_val_loss", "95% t interval", "+/-");
    for (int i = 0; i < s->n_settings; i++) {
        const mm_sweep_setting *g = &s->settings[i];
        char n[16], pm[64], ci[64], sg[16];
        snprintf(n, sizeof n, "%d", g->n_paired);
        fprintf(out, "%-*s %5s", w, g->name, n);
        if (i == s->baseline) {
            fprintf(out, " %16s\n", "(baseline)");
            continue;
        }
        const mm_sweep_paired *d[2] = {&g->d_acc, &g->d_vloss};
        for (int k = 0; k < 2; k++) {
            d_cells(pm, ci, sizeof pm, d[k]);
            snprintf(sg, sizeof sg, "%d/%d", d[k]->n_pos, d[k]->n_neg);
            mm__report_cell(out, 16, pm);
            mm__report_cell(out, 20, ci);
            mm__report_cell(out, 5, sg);
        }
        fputc('\n', out);
    }
    fprintf(out, "(pairs = seeds both finished; mean±sd of d over them, sd with n-1; 95 %% interval\n"
                 " mean -+ t(0.975, n-1) sd/sqrt(n), Student's t; +/- = pairs with d > 0 / d < 0)\n");
}
