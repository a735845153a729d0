/* Checkpoint file format v1, v2 and v3 (docs/formats.md): a 200-byte
 * little-endian header, the parameters, optionally AdamW's m and v, in v2
 * optionally the outer optimizer's block and AccumAdamW's accumulator
 * block, in v3 also the error feedback's block, then a SHA-256 of all
 * bytes before it. The whole file is read and checked before anything is
 * copied into the caller's model, so a failed load changes nothing. */
#include "model/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/sha256.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints are written as little-endian memory images; port put/get first"
#endif

#define CKPT_MAGIC "MMCKPT01"
#define CKPT_VERSION 1u        /* written when no v2 block is present: unchanged files */
#define CKPT_VERSION_MAX 3u
#define CKPT_HEADER 200
#define FLAG_OPT 1u
#define FLAG_OUTER 2u          /* v2: int64 outer step, int64 0, outer params, outer momentum */
#define FLAG_ACCUM 4u          /* v2: int64 accum_steps, int64 0, the accumulator */
#define FLAG_EF 8u             /* v3: int64 0, int64 0, the error feedback */
#define BLOCK_HEAD 16

enum { /* header field offsets */
    OFF_MAGIC = 0, OFF_VERSION = 8, OFF_FLAGS = 12, OFF_CFG = 16, OFF_FP = 32,
    OFF_NPARAMS = 64, OFF_STEP = 72, OFF_ROUND = 80, OFF_PEER = 88, OFF_NPEERS = 92,
    OFF_PSW = 96, OFF_RNG = 104, OFF_SEED = 136, OFF_LRMAX = 144, OFF_LRMIN = 148,
    OFF_WARMUP = 152, OFF_TOTAL = 160, OFF_BETA1 = 168, OFF_BETA2 = 172, OFF_EPS = 176,
    OFF_WD = 180, OFF_CLIP = 184, OFF_OPTSTEP = 192
};

static void put(uint8_t *h, size_t off, const void *v, size_t n) { memcpy(h + off, v, n); }
static void get(const uint8_t *h, size_t off, void *v, size_t n) { memcpy(v, h + off, n); }

static size_t file_size(size_t n_params, uint32_t flags)
{
    size_t vec = n_params * sizeof(float);
    return CKPT_HEADER + vec * ((flags & FLAG_OPT) ? 3 : 1) +
           ((flags & FLAG_OUTER) ? BLOCK_HEAD + 2 * vec : 0) +
           ((flags & FLAG_ACCUM) ? BLOCK_HEAD + vec : 0) +
           ((flags & FLAG_EF) ? BLOCK_HEAD + vec : 0) + 32;
}

/* Where the outer block and the accumulator block start. */
static size_t outer_off(size_t n, uint32_t flags)
{
    return CKPT_HEADER + n * sizeof(float) * ((flags & FLAG_OPT) ? 3 : 1);
}

static size_t accum_off(size_t n, uint32_t flags)
{
    return outer_off(n, flags) + ((flags & FLAG_OUTER) ? BLOCK_HEAD + 2 * n * sizeof(float) : 0);
}

static size_t ef_off(size_t n, uint32_t flags)
{
    return accum_off(n, flags) + ((flags & FLAG_ACCUM) ? BLOCK_HEAD + n * sizeof(float) : 0);
}

/* The oldest version that holds these blocks: files without the newer
 * blocks stay byte for byte what an older murmur wrote. */
static uint32_t version_for(uint32_t flags)
{
    return flags & FLAG_EF ? 3u : flags & (FLAG_OUTER | FLAG_ACCUM) ? 2u : CKPT_VERSION;
}

static uint32_t known_flags(uint32_t version)
{
    return version == 1 ? FLAG_OPT
           : version == 2 ? FLAG_OPT | FLAG_OUTER | FLAG_ACCUM
                          : FLAG_OPT | FLAG_OUTER | FLAG_ACCUM | FLAG_EF;
}

int mm_checkpoint_save(const char *path, const mm_model *m, const mm_adamw *opt,
                       const mm_ckpt_state *st, char *err, size_t errlen)
{
    if (opt && opt->n != m->n_params) {
        snprintf(err, errlen, "%s: optimizer holds %zu values, model %zu", path, opt->n, m->n_params);
        return -1;
    }
    mm_ckpt_state zero = {.pushsum_weight = 1.0};
    if (!st)
        st = &zero;
    bool accum = opt && opt->cfg.accum_steps > 1 && opt->acc;
    uint32_t flags = (opt ? FLAG_OPT : 0) | (st->outer.x ? FLAG_OUTER : 0) |
                     (accum ? FLAG_ACCUM : 0) | (st->ef.e ? FLAG_EF : 0);
    size_t n = m->n_params, size = file_size(n, flags);
    uint8_t *buf = calloc(1, size);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory (%zu bytes)", path, size);
        return -1;
    }
    uint32_t version = version_for(flags);
    int32_t cfg[4] = {m->cfg.n_layer, m->cfg.d_model, m->cfg.n_head, m->cfg.n_ctx};
    uint8_t fp[MM_FINGERPRINT_LEN];
    uint64_t np = n;
    mm_model_fingerprint(&m->cfg, fp);
    put(buf, OFF_MAGIC, CKPT_MAGIC, 8);
    put(buf, OFF_VERSION, &version, 4);
    put(buf, OFF_FLAGS, &flags, 4);
    put(buf, OFF_CFG, cfg, sizeof cfg);
    put(buf, OFF_FP, fp, sizeof fp);
    put(buf, OFF_NPARAMS, &np, 8);
    put(buf, OFF_STEP, &st->step, 8);
    put(buf, OFF_ROUND, &st->round, 8);
    put(buf, OFF_PEER, &st->peer_id, 4);
    put(buf, OFF_NPEERS, &st->n_peers, 4);
    put(buf, OFF_PSW, &st->pushsum_weight, 8);
    put(buf, OFF_RNG, st->rng.s, 32);
    put(buf, OFF_SEED, &st->seed, 8);
    if (opt) {
        const mm_adamw_config *c = &opt->cfg;
        int64_t warm = c->warmup_steps, total = c->total_steps, ostep = opt->step;
        put(buf, OFF_LRMAX, &c->lr_max, 4);
        put(buf, OFF_LRMIN, &c->lr_min, 4);
        put(buf, OFF_WARMUP, &warm, 8);
        put(buf, OFF_TOTAL, &total, 8);
        put(buf, OFF_BETA1, &c->beta1, 4);
        put(buf, OFF_BETA2, &c->beta2, 4);
        put(buf, OFF_EPS, &c->eps, 4);
        put(buf, OFF_WD, &c->weight_decay, 4);
        put(buf, OFF_CLIP, &c->grad_clip, 4);
        put(buf, OFF_OPTSTEP, &ostep, 8);
    }
    uint8_t *p = buf + CKPT_HEADER;
    memcpy(p, m->params, n * sizeof(float));
    if (opt) {
        memcpy(p + n * sizeof(float), opt->m, n * sizeof(float));
        memcpy(p + 2 * n * sizeof(float), opt->v, n * sizeof(float));
    }
    if (flags & FLAG_OUTER) {
        uint8_t *b = buf + outer_off(n, flags);
        put(b, 0, &st->outer.step, 8);
        memcpy(b + BLOCK_HEAD, st->outer.x, n * sizeof(float));
        memcpy(b + BLOCK_HEAD + n * sizeof(float), st->outer.m, n * sizeof(float));
    }
    if (flags & FLAG_ACCUM) {
        uint8_t *b = buf + accum_off(n, flags);
        int64_t k = opt->cfg.accum_steps;
        put(b, 0, &k, 8);
        memcpy(b + BLOCK_HEAD, opt->acc, n * sizeof(float));
    }
    if (flags & FLAG_EF)
        memcpy(buf + ef_off(n, flags) + BLOCK_HEAD, st->ef.e, n * sizeof(float));
    mm_sha256(buf, size - 32, buf + size - 32);
    int rc = mm_write_atomic(path, buf, size, err, errlen);
    free(buf);
    return rc;
}

/* Reads at most limit bytes of path; *len is the file's real size. */
static uint8_t *read_file(const char *path, size_t limit, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    *len = (size_t)sb.st_size;
    size_t want = *len < limit ? *len : limit;
    uint8_t *buf = malloc(want ? want : 1);
    size_t got = 0;
    while (buf && got < want) {
        ssize_t r = read(fd, buf + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != want) {
        snprintf(err, errlen, "%s: %s", path, buf ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    return buf;
}

/* Checks magic and version of a header of len bytes. */
static int check_header(const char *path, const uint8_t *h, size_t len, char *err, size_t errlen)
{
    if (len < 8) {
        snprintf(err, errlen, "%s: truncated: %zu bytes, not even a magic number", path, len);
        return -1;
    }
    if (memcmp(h, CKPT_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a murmur checkpoint (bad magic)", path);
        return -1;
    }
    if (len < CKPT_HEADER + 32) {
        snprintf(err, errlen, "%s: truncated: %zu bytes, shorter than the header", path, len);
        return -1;
    }
    uint32_t version, flags;
    get(h, OFF_VERSION, &version, 4);
    get(h, OFF_FLAGS, &flags, 4);
    if (version < 1 || version > CKPT_VERSION_MAX) {
        snprintf(err, errlen, "%s: checkpoint format version %u, this murmur reads versions 1 "
                 "to %u", path, version, CKPT_VERSION_MAX);
        return -1;
    }
    if (flags & ~known_flags(version)) {
        snprintf(err, errlen, "%s: unknown flags 0x%x for format version %u (corrupted?)", path,
                 flags, version);
        return -1;
    }
    return 0;
}

static void header_config(const uint8_t *h, mm_model_config *cfg)
{
    int32_t c[4];
    get(h, OFF_CFG, c, sizeof c);
    cfg->n_layer = c[0];
    cfg->d_model = c[1];
    cfg->n_head = c[2];
    cfg->n_ctx = c[3];
}

int mm_checkpoint_peek(const char *path, mm_model_config *cfg, char *err, size_t errlen)
{
    size_t len;
    uint8_t *h = read_file(path, CKPT_HEADER, &len, err, errlen);
    if (!h)
        return -1;
    int rc = check_header(path, h, len, err, errlen);
    if (rc == 0) {
        header_config(h, cfg);
        const char *why = mm_model_config_check(cfg);
        if (why) {
            snprintf(err, errlen, "%s: corrupted header: %s", path, why);
            rc = -1;
        }
    }
    free(h);
    return rc;
}

static void describe(const mm_model_config *c, char *out, size_t n)
{
    snprintf(out, n, "layers %d, width %d, heads %d, ctx %d", c->n_layer, c->d_model, c->n_head,
             c->n_ctx);
}

int mm_checkpoint_load(const char *path, mm_model *m, mm_adamw *opt, mm_ckpt_state *st,
                       char *err, size_t errlen)
{
    size_t n = m->n_params, limit = file_size(n, FLAG_OPT | FLAG_OUTER | FLAG_ACCUM | FLAG_EF),
           len;
    /* One byte past the largest valid size tells "too long" from "exact". */
    uint8_t *buf = read_file(path, limit + 1, &len, err, errlen);
    if (!buf)
        return -1;
    int rc = -1;
    if (check_header(path, buf, len, err, errlen) != 0)
        goto out;
    uint32_t flags;
    uint64_t np;
    get(buf, OFF_FLAGS, &flags, 4);
    get(buf, OFF_NPARAMS, &np, 8);
    if (np != n) {
        char have[96];
        mm_model_config fc;
        header_config(buf, &fc);
        describe(&fc, have, sizeof have);
        snprintf(err, errlen, "%s: holds %llu parameters (%s), the model has %zu", path,
                 (unsigned long long)np, have, n);
        goto out;
    }
    size_t want = file_size(n, flags);
    if (len != want) {
        snprintf(err, errlen, "%s: %s: %zu bytes, expected %zu", path,
                 len < want ? "truncated" : "trailing bytes after the checksum", len, want);
        goto out;
    }
    uint8_t sum[32];
    mm_sha256(buf, want - 32, sum);
    if (memcmp(sum, buf + want - 32, 32) != 0) {
        snprintf(err, errlen, "%s: checksum mismatch: the file is corrupted", path);
        goto out;
    }
    mm_model_config fc;
    header_config(buf, &fc);
    if (memcmp(&fc, &m->cfg, sizeof fc) != 0) {
        char have[96], need[96];
        describe(&fc, have, sizeof have);
        describe(&m->cfg, need, sizeof need);
        snprintf(err, errlen, "%s: model config differs: checkpoint has %s, this model %s", path,
                 have, need);
        goto out;
    }
    uint8_t fp[MM_FINGERPRINT_LEN];
    mm_model_fingerprint(&m->cfg, fp);
    if (memcmp(fp, buf + OFF_FP, sizeof fp) != 0) {
        snprintf(err, errlen, "%s: model fingerprint differs (written by another model version)",
                 path);
        goto out;
    }
    if (opt && !(flags & FLAG_OPT)) {
        snprintf(err, errlen, "%s: holds no optimizer state, cannot resume training from it", path);
        goto out;
    }
    int64_t file_k = 0;
    if (flags & FLAG_ACCUM)
        get(buf + accum_off(n, flags), 0, &file_k, 8);
    int run_k = opt && opt->cfg.accum_steps > 1 ? opt->cfg.accum_steps : 0;
    if (opt && (int64_t)run_k != file_k) {
        snprintf(err, errlen, "%s: written with --adam-accum %lld, this run has --adam-accum %d "
                 "(the optimizer states differ)", path, (long long)(file_k > 1 ? file_k : 0),
                 run_k);
        goto out;
    }
    if (opt && opt->n != n) {
        snprintf(err, errlen, "%s: optimizer sized for %zu values, checkpoint has %zu", path,
                 opt->n, n);
        goto out;
    }

    /* Every check passed: only now touch the caller's state. */
    const uint8_t *p = buf + CKPT_HEADER;
    memcpy(m->params, p, n * sizeof(float));
    if (opt) {
        mm_adamw_config *c = &opt->cfg;
        int64_t warm, total, ostep;
        get(buf, OFF_LRMAX, &c->lr_max, 4);
        get(buf, OFF_LRMIN, &c->lr_min, 4);
        get(buf, OFF_WARMUP, &warm, 8);
        get(buf, OFF_TOTAL, &total, 8);
        get(buf, OFF_BETA1, &c->beta1, 4);
        get(buf, OFF_BETA2, &c->beta2, 4);
        get(buf, OFF_EPS, &c->eps, 4);
        get(buf, OFF_WD, &c->weight_decay, 4);
        get(buf, OFF_CLIP, &c->grad_clip, 4);
        get(buf, OFF_OPTSTEP, &ostep, 8);
        c->warmup_steps = (long)warm;
        c->total_steps = (long)total;
        opt->step = (long)ostep;
        memcpy(opt->m, p + n * sizeof(float), n * sizeof(float));
        memcpy(opt->v, p + 2 * n * sizeof(float), n * sizeof(float));
        if (flags & FLAG_ACCUM)
            memcpy(opt->acc, buf + accum_off(n, flags) + BLOCK_HEAD, n * sizeof(float));
    }
    if (st) {
        st->outer.has = (flags & FLAG_OUTER) != 0;
        st->outer.step = 0;
        if (st->outer.has) {
            const uint8_t *b = buf + outer_off(n, flags);
            get(b, 0, &st->outer.step, 8);
            if (st->outer.x) {
                memcpy(st->outer.x, b + BLOCK_HEAD, n * sizeof(float));
                memcpy(st->outer.m, b + BLOCK_HEAD + n * sizeof(float), n * sizeof(float));
            }
        }
        st->ef.has = (flags & FLAG_EF) != 0;
        if (st->ef.has && st->ef.e)
            memcpy(st->ef.e, buf + ef_off(n, flags) + BLOCK_HEAD, n * sizeof(float));
        get(buf, OFF_STEP, &st->step, 8);
        get(buf, OFF_ROUND, &st->round, 8);
        get(buf, OFF_PEER, &st->peer_id, 4);
        get(buf, OFF_NPEERS, &st->n_peers, 4);
        get(buf, OFF_PSW, &st->pushsum_weight, 8);
        get(buf, OFF_RNG, st->rng.s, 32);
        get(buf, OFF_SEED, &st->seed, 8);
    }
    rc = 0;
out:
    free(buf);
    return rc;
}
