/* murmur report's accuracy per label (mm_report_labels) on hand-made
 * metrics files in the format of docs/metrics.md: three peers, evals with
 * val_acc_labels at rounds 4 and 9; one peer without labels at round 9
 * (left out), one label only one peer has. Every expected figure is
 * computed by hand below. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "report/report.h"
#include "tests/testutil.h"

static char run[256];

static void write_peer(int i, const char *evals)
{
    char path[512];
    snprintf(path, sizeof path, "%s/node-%d", run, i);
    assert_int_equal(mkdir(path, 0777), 0);
    snprintf(path, sizeof path, "%s/node-%d/metrics.jsonl", run, i);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"ev\":\"start\",\"peer\":%d,\"n_peers\":3,\"params\":10,\"algo\":\"dpsgd\","
               "\"topology\":\"ring-3.topo\",\"resumed_round\":0,\"time\":0}\n", i);
    fputs(evals, f);
    fprintf(f, "{\"ev\":\"end\",\"round\":9,\"step\":10,\"time\":2,\"reason\":\"done\"}\n");
    fclose(f);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void labels_at_the_latest_round(void **state)
{
    (void)state;
    snprintf(run, sizeof run, "/tmp/mm-report-labels-XXXXXX");
    assert_non_null(mkdtemp(run));
#define EVAL(r, labels) "{\"ev\":\"eval\",\"round\":" #r ",\"step\":" #r ",\"time\":1," \
    "\"val_loss\":2,\"val_bpb\":2.9,\"val_acc\":0.3,\"norm\":1" labels "}\n"
    write_peer(0, EVAL(4, ",\"val_acc_labels\":{\"news\":0.9,\"fiction\":0.9}")
                  EVAL(9, ",\"val_acc_labels\":{\"news\":0.30,\"fiction\":0.50,\"lore\":0.10}"));
    write_peer(1, EVAL(9, ",\"val_acc_labels\":{\"fiction\":0.70,\"news\":0.20}"));
    write_peer(2, EVAL(4, ",\"val_acc_labels\":{\"news\":0.5}") EVAL(9, ""));
    mm_report r;
    mm_report_opts opt = {0};
    char err[512], csv[512];
    assert_int_equal(mm_report_load(run, &opt, &r, err, sizeof err), 0);
    snprintf(csv, sizeof csv, "%s/labels.csv", run);
    FILE *out = tmpfile();
    assert_int_equal(mm_report_labels(&r, out, csv), 1);
    fclose(out);
    /* round 9, peers 0 and 1: news (0.30, 0.20), fiction (0.50, 0.70), lore peer 0 only;
     * names quoted as in every CSV of the report */
    const char *want = "label,round,peers,acc_mean,acc_min,acc_max\n"
                       "\"news\",9,2,0.250000,0.200000,0.300000\n"
                       "\"fiction\",9,2,0.600000,0.500000,0.700000\n"
                       "\"lore\",9,1,0.100000,0.100000,0.100000\n";
    const char *got = slurp(csv);
    assert_non_null(got);
    assert_string_equal(got, want);
    mm_report_free(&r);
    tu_rm_rf(run);
}

static void no_labels_no_table(void **state)
{
    (void)state;
    snprintf(run, sizeof run, "/tmp/mm-report-labels-XXXXXX");
    assert_non_null(mkdtemp(run));
    write_peer(0, EVAL(4, ""));
    mm_report r;
    mm_report_opts opt = {0};
    char err[512], csv[512];
    assert_int_equal(mm_report_load(run, &opt, &r, err, sizeof err), 0);
    snprintf(csv, sizeof csv, "%s/labels.csv", run);
    assert_int_equal(mm_report_labels(&r, stdout, csv), 0);
    assert_null(slurp(csv));
    mm_report_free(&r);
    tu_rm_rf(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(labels_at_the_latest_round),
        cmocka_unit_test(no_labels_no_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
