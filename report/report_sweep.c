/* A sweep directory (scripts/sweep.sh) aggregated: its plan, each planned
 * run's status and final figures, and per setting the mean, standard
 * deviation and number of seeds; the table and the two CSVs (docs/sweep.md).
 * The plots are in report_sweep_plot.c. */
#include "report/sweep.h"
#include "report/report_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void mm_sweep_stat_of(const double *v, int count, mm_sweep_stat *st)
{
    double s = 0;
    int n = 0;
    for (int i = 0; i < count; i++)
        if (isfinite(v[i])) {
            s += v[i];
            n++;
        }
    st->n = n;
    st->mean = n ? s / n : NAN;
    st->sd = NAN;
    if (n < 2)
        return;
    double m2 = 0;
    for (int i = 0; i < count; i++)
        if (isfinite(v[i]))
            m2 += (v[i] - st->mean) * (v[i] - st->mean);
    st->sd = sqrt(m2 / (n - 1));
}

const char *mm_sweep_status_name(mm_sweep_status s)
{
    static const char *names[] = {"done", "missing", "failed", "interrupted", "unfinished",
                                  "invalid"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The first line of a marker file, without its newline ("" if none). */
static void first_line(const char *path, char *buf, size_t len)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(buf, (int)len, f))
        buf[strcspn(buf, "\r\n")] = 0;
    fclose(f);
}

/* Splits line at tabs into at most max fields (in place); returns the count. */
static int split_tabs(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        f[n++] = p;
        char *t = strchr(p, '\t');
        if (!t)
            break;
        *t = 0;
        p = t + 1;
    }
    return n;
}

static char *dupstr(const char *s)
{
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

/* The run's figures from its report (see mm_sweep_run). */
static void run_figures(mm_sweep_run *u, const mm_report *r)
{
    mm__rep_finals f;
    mm__report_finals(r, &f);
    u->acc = f.acc;
    u->vloss = f.vloss;
    u->xi_final = f.xi;
    u->xi_method = f.method;
    u->bytes_peer = f.sent_peer;
    u->wall = f.wall;
    u->rounds = f.last_round + 1;
    double s = 0, s2 = 0;
    int n = 0, n_exact = 0;
    for (size_t i = 0; i < r->n_rows; i++) {
        const mm_rep_row *w = &r->rows[i];
        if (!isfinite(w->xi))
            continue;
        s += w->xi;
        s2 += w->xi * w->xi;
        n++;
        n_exact += !strcmp(w->method, "exact");
    }
    u->n_xi = n;
    u->xi_avg = n ? s / n : NAN;
    u->xi_rms = n ? sqrt(s2 / n) : NAN;
    u->xi_avg_method = n == 0 ? "none" : n_exact == n ? "exact" : n_exact == 0 ? "sketch" : "mixed";
}

/* Status of a run whose directory has sweep.done: every planned peer must
 * have ended 'done'. Loads the report and fills the figures. */
static void check_done_run(mm_sweep_run *u, const char *path, int peers, FILE *warn)
{
    mm_report r;
    char err[512];
    mm_report_opts opt = {.warn = warn};
    if (mm_report_load(path, &opt, &r, err, sizeof err) != 0) {
        u->status = MM_SWEEP_INVALID;
        snprintf(u->why, sizeof u->why, "sweep.done, but %.200s", err);
        return;
    }
    u->status = MM_SWEEP_DONE;
    for (int k = 0; k < peers && u->status == MM_SWEEP_DONE; k++) {
        const mm_rep_peer *p = NULL;
        for (int i = 0; i < r.n_peers; i++)
            if (r.peers[i].id == k)
                p = &r.peers[i];
        if (!p || !p->has_metrics) {
            u->status = MM_SWEEP_INVALID;
            snprintf(u->why, sizeof u->why, "sweep.done, but peer %d has no metrics", k);
        } else if (!p->ended || strcmp(p->end_reason, "done") != 0) {
            u->status = MM_SWEEP_INVALID;
            snprintf(u->why, sizeof u->why, "sweep.done, but peer %d %s%s%s", k,
                     p->ended ? "ended '" : "has no end line", p->ended ? p->end_reason : "",
                     p->ended ? "', not 'done'" : "");
        }
    }
    if (u->status == MM_SWEEP_DONE)
        run_figures(u, &r);
    mm_report_free(&r);
}

static void classify(mm_sweep_run *u, const char *dir, int peers, FILE *warn)
{
    char path[4096], mk[4200];
    snprintf(path, sizeof path, "%s/%s", dir, u->run);
    u->acc = u->vloss = u->xi_final = u->xi_avg = u->xi_rms = u->bytes_peer = u->wall = NAN;
    u->xi_method = u->xi_avg_method = "none";
    u->rounds = 0;
    if (!exists(path)) {
        u->status = MM_SWEEP_MISSING;
        snprintf(u->why, sizeof u->why, "not run");
        return;
    }
    snprintf(mk, sizeof mk, "%s/sweep.done", path);
    if (exists(mk)) {
        check_done_run(u, path, peers, warn);
        return;
    }
    snprintf(mk, sizeof mk, "%s/sweep.failed", path);
    if (exists(mk)) {
        u->status = MM_SWEEP_FAILED;
        first_line(mk, u->why, sizeof u->why);
        return;
    }
    snprintf(mk, sizeof mk, "%s/sweep.interrupted", path);
    if (exists(mk)) {
        u->status = MM_SWEEP_INTERRUPTED;
        first_line(mk, u->why, sizeof u->why);
        return;
    }
    u->status = MM_SWEEP_UNFINISHED;
    snprintf(u->why, sizeof u->why, "no sweep.done: still running, or the sweep stopped during it");
}

static void setting_method(char *out, const mm_sweep *s, int si, bool avg)
{
    int n = 0, ex = 0, sk = 0;
    for (int i = 0; i < s->n_runs; i++) {
        const mm_sweep_run *u = &s->runs[i];
        if (u->setting_idx != si || u->status != MM_SWEEP_DONE)
            continue;
        const char *m = avg ? u->xi_avg_method : u->xi_method;
        n++;
        ex += !strcmp(m, "exact");
        sk += !strcmp(m, "sketch");
    }
    snprintf(out, 8, "%s", ex + sk == 0 ? "none" : ex == n ? "exact" : sk == n ? "sketch" : "mixed");
}

static void aggregate(mm_sweep *s)
{
    double *v = malloc((size_t)(s->n_runs ? s->n_runs : 1) * sizeof *v);
    if (!v)
        abort();
    for (int si = 0; si < s->n_settings; si++) {
        mm_sweep_setting *g = &s->settings[si];
        struct {
            mm_sweep_stat *st;
            size_t off;
        } fig[] = {
            {&g->acc, offsetof(mm_sweep_run, acc)},
            {&g->vloss, offsetof(mm_sweep_run, vloss)},
            {&g->xi_final, offsetof(mm_sweep_run, xi_final)},
            {&g->xi_avg, offsetof(mm_sweep_run, xi_avg)},
            {&g->xi_rms, offsetof(mm_sweep_run, xi_rms)},
            {&g->bytes_peer, offsetof(mm_sweep_run, bytes_peer)},
            {&g->wall, offsetof(mm_sweep_run, wall)},
        };
        for (size_t k = 0; k < sizeof fig / sizeof fig[0]; k++) {
            int n = 0;
            for (int i = 0; i < s->n_runs; i++) {
                const mm_sweep_run *u = &s->runs[i];
                if (u->setting_idx == si && u->status == MM_SWEEP_DONE)
                    v[n++] = *(const double *)((const char *)u + fig[k].off);
            }
            mm_sweep_stat_of(v, n, fig[k].st);
        }
        setting_method(g->xi_method, s, si, false);
        setting_method(g->xi_avg_method, s, si, true);
    }
    free(v);
}

/* The plan's header: "index setting seed run topology peers AXIS... flags". */
static int read_header(mm_sweep *s, char *line, const char *plan, int lineno, char *err,
                       size_t errlen)
{
    char *f[64];
    int n = split_tabs(line, f, 64);
    static const char *fixed[] = {"index", "setting", "seed", "run", "topology", "peers"};
    bool ok = n >= 7 && !strcmp(f[n - 1], "flags");
    for (int i = 0; ok && i < 6; i++)
        ok = !strcmp(f[i], fixed[i]);
    if (!ok) {
        snprintf(err, errlen, "%s:%d: not a sweep plan header (index, setting, seed, run, "
                              "topology, peers, the axes, flags)", plan, lineno);
        return -1;
    }
    s->n_axes = n - 7;
    s->axes = calloc((size_t)(s->n_axes ? s->n_axes : 1), sizeof *s->axes);
    if (!s->axes)
        abort();
    for (int i = 0; i < s->n_axes; i++)
        s->axes[i] = dupstr(f[6 + i]);
    return 0;
}

static int find_setting(const mm_sweep *s, const char *name)
{
    for (int i = 0; i < s->n_settings; i++)
        if (!strcmp(s->settings[i].name, name))
            return i;
    return -1;
}

static int read_row(mm_sweep *s, char *line, const char *plan, int lineno, int *cap_runs,
                    int *cap_set, char *err, size_t errlen)
{
    char *f[64];
    int want = 7 + s->n_axes;
    int n = split_tabs(line, f, 64);
    char *end;
    long long idx = strtoll(f[0], &end, 10);
    long long seed = n > 2 ? strtoll(f[2], &end, 10) : 0;
    bool seed_ok = n > 2 && *f[2] && !*end;
    long long peers = n > 5 ? strtoll(f[5], &end, 10) : 0;
    if (n != want || !seed_ok || *end || peers < 1 || idx < 0 || !*f[1] || !*f[3]) {
        snprintf(err, errlen, "%s:%d: a plan line has %d tab-separated fields (index, setting, "
                              "seed, run, topology, peers, %d axis value%s, flags), with numbers "
                              "where due; this one does not", plan, lineno, want, s->n_axes,
                 s->n_axes == 1 ? "" : "s");
        return -1;
    }
    if (s->n_runs == *cap_runs) {
        *cap_runs = *cap_runs ? 2 * *cap_runs : 32;
        s->runs = realloc(s->runs, (size_t)*cap_runs * sizeof *s->runs);
        if (!s->runs)
            abort();
    }
    mm_sweep_run *u = &s->runs[s->n_runs++];
    memset(u, 0, sizeof *u);
    u->index = (int)idx;
    snprintf(u->setting, sizeof u->setting, "%s", f[1]);
    u->seed = seed;
    snprintf(u->run, sizeof u->run, "%s", f[3]);
    int si = find_setting(s, f[1]);
    if (si < 0) {
        if (s->n_settings == *cap_set) {
            *cap_set = *cap_set ? 2 * *cap_set : 16;
            s->settings = realloc(s->settings, (size_t)*cap_set * sizeof *s->settings);
            if (!s->settings)
                abort();
        }
        si = s->n_settings++;
        mm_sweep_setting *g = &s->settings[si];
        memset(g, 0, sizeof *g);
        snprintf(g->name, sizeof g->name, "%s", f[1]);
        snprintf(g->topology_file, sizeof g->topology_file, "%s", f[4]);
        const char *b = strrchr(f[4], '/') ? strrchr(f[4], '/') + 1 : f[4];
        snprintf(g->topology, sizeof g->topology, "%s", b);
        size_t tl = strlen(g->topology);
        if (tl > 5 && !strcmp(g->topology + tl - 5, ".topo"))
            g->topology[tl - 5] = 0;
        g->peers = (int)peers;
        g->axis_values = calloc((size_t)(s->n_axes ? s->n_axes : 1), sizeof *g->axis_values);
        if (!g->axis_values)
            abort();
        for (int i = 0; i < s->n_axes; i++)
            g->axis_values[i] = dupstr(f[6 + i]);
    }
    u->setting_idx = si;
    s->settings[si].n_planned++;
    return 0;
}

int mm_sweep_load(const char *dir, FILE *warn, mm_sweep *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->baseline = -1;
    char plan[4096], baseline[256] = "";
    snprintf(plan, sizeof plan, "%s/sweep.plan", dir);
    FILE *f = fopen(plan, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s (is %s a sweep's directory? scripts/sweep.sh writes it)",
                 plan, strerror(errno), dir);
        return -1;
    }
    s->dir = dupstr(dir);
    FILE *null = NULL;
    if (!warn)
        warn = null = fopen("/dev/null", "w");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, cap_runs = 0, cap_set = 0, rc = 0;
    bool header = false;
    while ((len = getline(&line, &cap, f)) > 0 && rc == 0) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!strncmp(line, "# baseline ", 11)) {
            snprintf(baseline, sizeof baseline, "%s", line + 11);
            continue;
        }
        if (line[0] == '#' || line[0] == 0)
            continue;
        if (!header) {
            rc = read_header(s, line, plan, lineno, err, errlen);
            header = true;
        } else {
            rc = read_row(s, line, plan, lineno, &cap_runs, &cap_set, err, errlen);
        }
    }
    free(line);
    fclose(f);
    if (rc == 0 && s->n_runs == 0) {
        snprintf(err, errlen, "%s: no planned run", plan);
        rc = -1;
    }
    if (rc == 0) {
        for (int i = 0; i < s->n_runs; i++) {
            mm_sweep_run *u = &s->runs[i];
            classify(u, dir, s->settings[u->setting_idx].peers, warn);
            if (u->status == MM_SWEEP_DONE)
                s->settings[u->setting_idx].n_done++;
        }
        aggregate(s);
        if (baseline[0])
            rc = mm_sweep_set_baseline(s, baseline, err, errlen);
    }
    if (null)
        fclose(null);
    if (rc != 0)
        mm_sweep_free(s);
    return rc;
}

static const char *last_component(const char *d, char *buf, size_t len)
{
    size_t n = strlen(d);
    while (n > 1 && d[n - 1] == '/')
        n--;
    size_t b = n;
    while (b > 0 && d[b - 1] != '/')
        b--;
    snprintf(buf, len, "%.*s", (int)(n - b), d + b);
    return buf;
}

static int axis_index(mm_sweep *s, const char *name, bool add)
{
    for (int i = 0; i < s->n_axes; i++)
        if (!strcmp(s->axes[i], name))
            return i;
    if (!add)
        return -1;
    s->axes = realloc(s->axes, (size_t)(s->n_axes + 1) * sizeof *s->axes);
    if (!s->axes)
        abort();
    s->axes[s->n_axes] = dupstr(name);
    return s->n_axes++;
}

/* Appends sweep one's settings and runs to s (axes already in s). */
static void merge_one(mm_sweep *s, const mm_sweep *one)
{
    char base[256];
    last_component(one->dir, base, sizeof base);
    int first = s->n_settings;
    s->settings = realloc(s->settings, (size_t)(s->n_settings + one->n_settings) * sizeof *s->settings);
    s->runs = realloc(s->runs, (size_t)(s->n_runs + one->n_runs) * sizeof *s->runs);
    if (!s->settings || !s->runs)
        abort();
    for (int i = 0; i < one->n_settings; i++) {
        mm_sweep_setting *g = &s->settings[s->n_settings];
        *g = one->settings[i];
        if (find_setting(s, g->name) >= 0) {
            char name[sizeof g->name];
            snprintf(name, sizeof name, "%.100s:%.150s", base, one->settings[i].name);
            memcpy(g->name, name, sizeof name);
        }
        g->axis_values = calloc((size_t)(s->n_axes ? s->n_axes : 1), sizeof *g->axis_values);
        if (!g->axis_values)
            abort();
        for (int k = 0; k < s->n_axes; k++) {
            int j = -1;
            for (int m = 0; m < one->n_axes && j < 0; m++)
                if (!strcmp(one->axes[m], s->axes[k]))
                    j = m;
            g->axis_values[k] = dupstr(j >= 0 ? one->settings[i].axis_values[j] : "");
        }
        s->n_settings++;
    }
    for (int i = 0; i < one->n_runs; i++) {
        mm_sweep_run *u = &s->runs[s->n_runs++];
        *u = one->runs[i];
        u->setting_idx = first + one->runs[i].setting_idx;
        memcpy(u->setting, s->settings[u->setting_idx].name, sizeof u->setting);
        snprintf(u->run, sizeof u->run, "%.300s/%.320s", one->dir, one->runs[i].run);
    }
}

int mm_sweep_load_many(char *const *dirs, int n, FILE *warn, mm_sweep *s, char *err,
                       size_t errlen)
{
    if (n == 1)
        return mm_sweep_load(dirs[0], warn, s, err, errlen);
    mm_sweep *all = calloc((size_t)n, sizeof *all);
    if (!all)
        abort();
    int loaded = 0, rc = 0;
    while (loaded < n && rc == 0)
        if ((rc = mm_sweep_load(dirs[loaded], warn, &all[loaded], err, errlen)) == 0)
            loaded++;
    memset(s, 0, sizeof *s);
    s->baseline = -1;
    char baseline[256] = "";
    if (rc == 0) {
        size_t dl = 1;
        for (int k = 0; k < n; k++)
            dl += strlen(dirs[k]) + 3;
        s->dir = calloc(dl, 1);
        s->axes = calloc(1, sizeof *s->axes);
        if (!s->dir || !s->axes)
            abort();
        for (int k = 0; k < n; k++) {
            strcat(strcat(s->dir, k ? " + " : ""), dirs[k]);
            for (int m = 0; m < all[k].n_axes; m++)
                axis_index(s, all[k].axes[m], true);
        }
        for (int k = 0; k < n; k++) {
            int before = s->n_settings;
            merge_one(s, &all[k]);
            if (!baseline[0] && all[k].baseline >= 0)
                snprintf(baseline, sizeof baseline, "%s", s->settings[before + all[k].baseline].name);
        }
    }
    for (int k = 0; k < loaded; k++)
        mm_sweep_free(&all[k]);
    free(all);
    if (rc == 0 && baseline[0])
        rc = mm_sweep_set_baseline(s, baseline, err, errlen);
    if (rc != 0)
        mm_sweep_free(s);
    return rc;
}

void mm_sweep_free(mm_sweep *s)
{
    for (int i = 0; i < s->n_settings; i++) {
        for (int k = 0; k < s->n_axes; k++)
            free(s->settings[i].axis_values[k]);
        free(s->settings[i].axis_values);
    }
    for (int k = 0; k < s->n_axes; k++)
        free(s->axes[k]);
    free(s->axes);
    free(s->settings);
    free(s->runs);
    free(s->dir);
    memset(s, 0, sizeof *s);
}

/* "mean±sd" (or "mean" with one seed, "-" with none) with format fm. */
static const char *pm(char *buf, size_t len, const char *fm, const mm_sweep_stat *st, double scale)
{
    if (st->n == 0)
        return snprintf(buf, len, "-"), buf;
    int k = snprintf(buf, len, fm, st->mean * scale);
    if (st->n >= 2 && k > 0 && (size_t)k < len) {
        snprintf(buf + k, len - (size_t)k, "±");
        k += (int)strlen(buf + k);
        snprintf(buf + k, len - (size_t)k, fm, st->sd * scale);
    }
    return buf;
}

#define PM(fm, st, scale) pm((char[48]){0}, 48, fm, st, scale)

void mm_sweep_print_table(const mm_sweep *s, FILE *out)
{
    int w = 7;
    for (int i = 0; i < s->n_settings; i++) {
        int l = (int)strlen(s->settings[i].name);
        w = l > w ? l : w;
    }
    fprintf(out, "%-*s %5s %5s %15s %15s %21s %21s %-6s %19s %13s\n", w, "setting", "peers",
            "seeds", "acc", "val_loss", "consensus_final", "consensus_avg", "how", "MB/peer",
            "wall_s");
    for (int i = 0; i < s->n_settings; i++) {
        const mm_sweep_setting *g = &s->settings[i];
        char seeds[16];
        snprintf(seeds, sizeof seeds, "%d/%d", g->n_done, g->n_planned);
        fprintf(out, "%-*s %5d %5s", w, g->name, g->peers, seeds);
        mm__report_cell(out, 15, PM("%.4f", &g->acc, 1));
        mm__report_cell(out, 15, PM("%.4f", &g->vloss, 1));
        mm__report_cell(out, 21, PM("%.3e", &g->xi_final, 1));
        mm__report_cell(out, 21, PM("%.3e", &g->xi_avg, 1));
        fprintf(out, " %-6s", g->xi_avg_method);
        mm__report_cell(out, 19, PM("%.3f", &g->bytes_peer, 1e-6));
        mm__report_cell(out, 13, PM("%.1f", &g->wall, 1));
        fputc('\n', out);
    }
    fprintf(out, "(mean±sd over the seeds that finished, sd with n-1; seeds = finished/planned;\n"
                 " final = last evaluation; consensus_avg = mean of Xi over the evaluation rounds,\n"
                 " how = exact from snapshots or sketch estimate; MB/peer = bytes sent per peer)\n");
    int left = 0;
    for (int i = 0; i < s->n_runs; i++)
        left += s->runs[i].status != MM_SWEEP_DONE;
    if (left) {
        fprintf(out, "\nleft out (%d run%s, not averaged):\n", left, left == 1 ? "" : "s");
        for (int i = 0; i < s->n_runs; i++) {
            const mm_sweep_run *u = &s->runs[i];
            if (u->status != MM_SWEEP_DONE)
                fprintf(out, "  %-*s seed %-4lld %-11s %s\n", w, u->setting, (long long)u->seed,
                        mm_sweep_status_name(u->status), u->why);
        }
    }
}

static void csv_stat(FILE *f, const mm_sweep_stat *st)
{
    mm__report_csv_num(f, "%.9g", st->mean);
    mm__report_csv_num(f, "%.9g", st->sd);
}

static void csv_d(FILE *f, const mm_sweep_paired *p, bool any)
{
    mm__report_csv_num(f, "%.9g", p->mean);
    mm__report_csv_num(f, "%.9g", p->sd);
    mm__report_csv_num(f, "%.9g", p->lo);
    mm__report_csv_num(f, "%.9g", p->hi);
    if (any)
        fprintf(f, ",%d,%d", p->n_pos, p->n_neg);
    else
        fprintf(f, ",,");
}

/* The paired columns of setting si: empty without a baseline. */
static void csv_paired(FILE *f, const mm_sweep *s, int si, int64_t *seeds)
{
    if (s->baseline < 0) {
        fprintf(f, ",,,,,,,,,,,,,,,");
        return;
    }
    const mm_sweep_setting *g = &s->settings[si];
    fputc(',', f);
    mm__report_csv_str(f, s->settings[s->baseline].name);
    fprintf(f, ",%d,\"", g->n_paired);
    int n = mm_sweep_paired_seeds(s, si, seeds);
    for (int k = 0; k < n; k++)
        fprintf(f, "%s%lld", k ? " " : "", (long long)seeds[k]);
    fputc('"', f);
    csv_d(f, &g->d_acc, g->d_acc.n > 0);
    csv_d(f, &g->d_vloss, g->d_vloss.n > 0);
}

int mm_sweep_write_csv(const mm_sweep *s, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int64_t *seeds = malloc((size_t)(s->n_runs ? s->n_runs : 1) * sizeof *seeds);
    if (!seeds)
        abort();
    fprintf(f, "setting,topology,topology_file,peers");
    for (int k = 0; k < s->n_axes; k++) {
        fputc(',', f);
        mm__report_csv_str(f, s->axes[k]);
    }
    fprintf(f, ",seeds_planned,seeds_done,seeds,acc_mean,acc_sd,val_loss_mean,val_loss_sd,"
               "consensus_final_mean,consensus_final_sd,consensus_final_method,"
               "consensus_avg_mean,consensus_avg_sd,consensus_rms_mean,consensus_rms_sd,"
               "consensus_avg_method,bytes_sent_per_peer_mean,bytes_sent_per_peer_sd,"
               "wall_s_mean,wall_s_sd,left_out,baseline,paired_n,paired_seeds,"
               "d_acc_mean,d_acc_sd,d_acc_lo,d_acc_hi,d_acc_pos,d_acc_neg,"
               "d_val_loss_mean,d_val_loss_sd,d_val_loss_lo,d_val_loss_hi,d_val_loss_pos,"
               "d_val_loss_neg\n");
    for (int i = 0; i < s->n_settings; i++) {
        const mm_sweep_setting *g = &s->settings[i];
        mm__report_csv_str(f, g->name);
        fputc(',', f);
        mm__report_csv_str(f, g->topology);
        fputc(',', f);
        mm__report_csv_str(f, g->topology_file);
        fprintf(f, ",%d", g->peers);
        for (int k = 0; k < s->n_axes; k++) {
            fputc(',', f);
            mm__report_csv_str(f, g->axis_values[k]);
        }
        fprintf(f, ",%d,%d,\"", g->n_planned, g->n_done);
        const char *sep = "";
        for (int r = 0; r < s->n_runs; r++)
            if (s->runs[r].setting_idx == i && s->runs[r].status == MM_SWEEP_DONE) {
                fprintf(f, "%s%lld", sep, (long long)s->runs[r].seed);
                sep = " ";
            }
        fputc('"', f);
        csv_stat(f, &g->acc);
        csv_stat(f, &g->vloss);
        csv_stat(f, &g->xi_final);
        fprintf(f, ",%s", g->xi_method);
        csv_stat(f, &g->xi_avg);
        csv_stat(f, &g->xi_rms);
        fprintf(f, ",%s", g->xi_avg_method);
        csv_stat(f, &g->bytes_peer);
        csv_stat(f, &g->wall);
        fprintf(f, ",\"");
        sep = "";
        for (int r = 0; r < s->n_runs; r++)
            if (s->runs[r].setting_idx == i && s->runs[r].status != MM_SWEEP_DONE) {
                fprintf(f, "%s%lld:%s", sep, (long long)s->runs[r].seed,
                        mm_sweep_status_name(s->runs[r].status));
                sep = " ";
            }
        fputc('"', f);
        csv_paired(f, s, i, seeds);
        fputc('\n', f);
    }
    free(seeds);
    return fclose(f) == 0 ? 0 : -1;
}

int mm_sweep_write_runs_csv(const mm_sweep *s, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "index,setting,seed,run,status,reason,rounds,acc,val_loss,consensus_final,"
               "consensus_final_method,consensus_avg,consensus_rms,consensus_avg_method,"
               "consensus_rows,bytes_sent_per_peer,wall_s\n");
    for (int i = 0; i < s->n_runs; i++) {
        const mm_sweep_run *u = &s->runs[i];
        fprintf(f, "%d,", u->index);
        mm__report_csv_str(f, u->setting);
        fprintf(f, ",%lld,", (long long)u->seed);
        mm__report_csv_str(f, u->run);
        fprintf(f, ",%s,", mm_sweep_status_name(u->status));
        mm__report_csv_str(f, u->status == MM_SWEEP_DONE ? "" : u->why);
        fprintf(f, ",%lld", (long long)u->rounds);
        mm__report_csv_num(f, "%.9g", u->acc);
        mm__report_csv_num(f, "%.9g", u->vloss);
        mm__report_csv_num(f, "%.9g", u->xi_final);
        fprintf(f, ",%s", u->xi_method);
        mm__report_csv_num(f, "%.9g", u->xi_avg);
        mm__report_csv_num(f, "%.9g", u->xi_rms);
        fprintf(f, ",%s,%d", u->xi_avg_method, u->n_xi);
        mm__report_csv_num(f, "%.1f", u->bytes_peer);
        mm__report_csv_num(f, "%.3f", u->wall);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -1;
}
