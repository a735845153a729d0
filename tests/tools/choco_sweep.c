/* The gamma sweep behind docs/compression.md ("Consensus step"): the ring
 * simulation of tests/choco_sim.h for every codec and gamma given, with
 * and without error feedback, several seeds. One CSV line per run on
 * stdout; progress on stderr.
 *   choco_sweep [-n PEERS] [-d DIM] [-r ROUNDS] [-s SEEDS] [-t TOL]
 *               [-c CODEC,...] [-g GAMMA,...] [-G NAIVE_GAMMA,...]
 * CHOCO runs stop once within TOL of the average (rounds_to_tol is the
 * figure); the naive scheme (no error feedback) runs all ROUNDS at each
 * NAIVE_GAMMA ("" for none).
 * make choco-sweep runs it and plots the CSV (scripts/plot-choco-sweep.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/choco_sim.h"

static int split(char *s, char **out, int max)
{
    int n = 0;
    for (char *t = strtok(s, ","); t && n < max; t = strtok(NULL, ","))
        out[n++] = t;
    return n;
}

int main(int argc, char **argv)
{
    int peers = 16, rounds = 3000, seeds = 3;
    unsigned long dim = 4096;
    double tol = 1e-3;
    char codecs_s[512] = "fp32,bf16,int8,sign,topk:0.1,topk:0.01,randk:0.1,randk:0.01";
    char gammas_s[512] = "0.02,0.05,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1";
    char naive_s[512] = "0.1,1";
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "choco_sweep: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "-n")) peers = atoi(v);
        else if (!strcmp(a, "-d")) dim = strtoul(v, NULL, 10);
        else if (!strcmp(a, "-r")) rounds = atoi(v);
        else if (!strcmp(a, "-s")) seeds = atoi(v);
        else if (!strcmp(a, "-t")) tol = atof(v);
        else if (!strcmp(a, "-c")) snprintf(codecs_s, sizeof codecs_s, "%s", v);
        else if (!strcmp(a, "-g")) snprintf(gammas_s, sizeof gammas_s, "%s", v);
        else if (!strcmp(a, "-G")) snprintf(naive_s, sizeof naive_s, "%s", v);
        else { fprintf(stderr, "choco_sweep: unknown option %s\n", a); return 2; }
    }
    if (peers < 3 || dim < 1 || rounds < 1 || seeds < 1) {
        fprintf(stderr, "choco_sweep: need -n >= 3, -d, -r, -s >= 1\n");
        return 2;
    }
    char *codecs[32], *gam[64], *ngam[64];
    int nc = split(codecs_s, codecs, 32), ng = split(gammas_s, gam, 64);
    int nn = split(naive_s, ngam, 64);
    printf("codec,gamma,feedback,seed,peers,dim,rounds,bytes_per_float,rounds_to_tol,tol,"
           "best_rel_err,final_rel_err,final_xi_rel,copies_agree\n");
    int total = nc * (ng + nn) * seeds, done = 0;
    for (int ci = 0; ci < nc; ci++)
        for (int gi = 0; gi < ng + nn; gi++)
            for (int seed = 1; seed <= seeds; seed++) {
                bool fb = gi < ng;
                const char *g = fb ? gam[gi] : ngam[gi - ng];
                choco_sim s = {.codec = codecs[ci], .peers = peers, .dim = dim,
                               .gamma = atof(g), .rounds = rounds, .feedback = fb,
                               .seed = (uint64_t)seed, .tol = tol, .stop_at_tol = fb};
                char err[256];
                if (choco_sim_run(&s, err, sizeof err) != 0) {
                    fprintf(stderr, "choco_sweep: %s gamma %s: %s\n", codecs[ci], g, err);
                    return 1;
                }
                printf("%s,%s,%d,%d,%d,%lu,%d,%.5f,%d,%g,%.3e,%.3e,%.3e,%d\n", codecs[ci], g,
                       fb, seed, peers, dim, rounds, (double)s.bytes / (double)dim,
                       s.rounds_to_tol, tol, s.best, s.err / s.err0, s.xi / s.err0,
                       s.copies_agree);
                fflush(stdout);
                fprintf(stderr, "\r[%d/%d] %-12s gamma %-5s %s   ", ++done, total, codecs[ci], g,
                        fb ? "CHOCO" : "naive");
            }
    fprintf(stderr, "\n");
    return 0;
}
