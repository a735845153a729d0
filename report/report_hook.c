/* The averaged model's accuracy: the report hands over the exact average of
 * the peers' snapshots of a round; this builds the model the run trained
 * (its shape from node-0's start line), loads xbar into it and evaluates it
 * on the same validation sample the peers use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/data.h"
#include "model/eval.h"
#include "model/model.h"
#include "report/jsonl.h"
#include "report/report_int.h"

/* The first start line of node-0 (every peer trains the same shape). */
static int read_start(const char *run_dir, mm_json_obj *o)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/node-0/metrics.jsonl", run_dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = -1;
    char err[128];
    while (rc != 0 && (len = getline(&line, &cap, f)) > 0) {
        if (!strstr(line, "\"ev\":\"start\""))
            continue;
        rc = mm_json_parse(line, (size_t)len, o, err, sizeof err);
    }
    free(line);
    fclose(f);
    return rc;
}

int mm_report_eval_model(const float *xbar, size_t n, int64_t round, const char *run_dir,
                         double *val_loss, double *val_acc)
{
    (void)round;
    mm_json_obj o = {0};
    if (read_start(run_dir, &o) != 0) {
        mm_json_free(&o);
        return 1;
    }
    double layers, width, heads, ctx, batch, windows;
    const char *data = mm_json_str(&o, "data");
    if (!data || !mm_json_num(&o, "layers", &layers) || !mm_json_num(&o, "width", &width) ||
        !mm_json_num(&o, "heads", &heads) || !mm_json_num(&o, "ctx", &ctx) ||
        !mm_json_num(&o, "batch", &batch) || !mm_json_num(&o, "eval_windows", &windows)) {
        mm_json_free(&o);
        return 1; /* a plain-vector run, or metrics from before these fields */
    }
    mm_model_config cfg = {.n_layer = (int)layers, .d_model = (int)width, .n_head = (int)heads,
                           .n_ctx = (int)ctx};
    int B = (int)batch, W = (int)windows;
    char data_dir[4096];
    snprintf(data_dir, sizeof data_dir, "%s", data);
    mm_json_free(&o);

    static mm_model model; /* built once per report: every round has the same shape */
    static mm_shard shard;
    static uint8_t *tokens;
    static int ready = -1;
    char err[512];
    if (ready < 0) {
        ready = 0;
        if (mm_model_config_check(&cfg) || mm_model_param_count(&cfg) != n ||
            mm_model_init(&model, &cfg, 0, err, sizeof err) != 0)
            return 1;
        if (mm_shard_load(&shard, data_dir, &(mm_partition){.kind = MM_PART_IID}, 0, 1, err, sizeof err) != 0) {
            fprintf(stderr, "murmur report: averaged model not evaluated: %s\n", err);
            return 1;
        }
        tokens = malloc((size_t)B * (size_t)(cfg.n_ctx + 1));
        ready = tokens != NULL;
    }
    if (!ready)
        return 1;
    memcpy(model.params, xbar, n * sizeof(float));
    mm_eval_result r;
    mm_evaluate(&model, &shard, W, B, cfg.n_ctx, tokens, &r);
    *val_loss = r.loss;
    *val_acc = r.acc;
    return 0;
}
