/* murmur generate: sample text from a checkpoint, one byte at a time.
 *
 * The model always runs on a full context of n_ctx bytes, padded after the
 * text: attention is causal, so the padding cannot change the logits at the
 * last real byte, and a fixed shape means the activations are allocated
 * once instead of at every new length. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint.h"
#include "model/model.h"
#include "base/rng.h"
#include "cli/commands.h"

static void usage(FILE *f)
{
    fprintf(f,
"usage: murmur generate --checkpoint FILE [OPTIONS]\n"
"Prints the prompt followed by text sampled from the model in FILE.\n\n"
"  --checkpoint FILE   a checkpoint written by murmur train or murmur node\n"
"  --prompt TEXT       the text to continue (default: a newline)\n"
"  --length N          bytes to generate (default 300)\n"
"  --temperature T     sampling temperature; 0 = always the likeliest byte\n"
"                      (default 0.8)\n"
"  --seed S            sampling seed (default 1)\n"
"  --help              this text\n");
}

/* Samples from softmax(logits / temp); temp 0 is argmax. */
static int sample(const float *logits, double temp, mm_rng *rng)
{
    int best = 0;
    for (int j = 1; j < MM_VOCAB; j++)
        if (logits[j] > logits[best])
            best = j;
    if (temp <= 0)
        return best;
    double p[MM_VOCAB], sum = 0;
    for (int j = 0; j < MM_VOCAB; j++) {
        p[j] = exp((logits[j] - logits[best]) / temp);
        sum += p[j];
    }
    double u = mm_rng_uniform(rng) * sum;
    for (int j = 0; j < MM_VOCAB; j++) {
        u -= p[j];
        if (u < 0)
            return j;
    }
    return best;
}

int cmd_generate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"checkpoint", 1, 0, 'c'}, {"prompt", 1, 0, 'p'}, {"length", 1, 0, 'n'},
        {"temperature", 1, 0, 't'}, {"seed", 1, 0, 's'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0},
    };
    const char *path = NULL, *prompt = "\n";
    long length = 300;
    double temp = 0.8;
    unsigned long long seed = 1;
    int c;
    char *end;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        errno = 0;
        switch (c) {
        case 'c': path = optarg; break;
        case 'p': prompt = optarg; break;
        case 'n':
            length = strtol(optarg, &end, 10);
            if (errno || *end || end == optarg || length < 0 || length > 1000000) {
                fprintf(stderr, "murmur generate: --length wants 0..1000000, got '%s'\n", optarg);
                return 2;
            }
            break;
        case 't':
            temp = strtod(optarg, &end);
            if (errno || *end || end == optarg || !(temp >= 0 && temp <= 100)) {
                fprintf(stderr, "murmur generate: --temperature wants 0..100, got '%s'\n", optarg);
                return 2;
            }
            break;
        case 's':
            seed = strtoull(optarg, &end, 10);
            if (errno || *end || end == optarg || optarg[0] == '-') {
                fprintf(stderr, "murmur generate: --seed wants an integer, got '%s'\n", optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        case ':': fprintf(stderr, "murmur generate: %s needs a value\n", argv[optind - 1]); return 2;
        default:
            fprintf(stderr, "murmur generate: unknown option '%s' (see --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (!path || optind < argc) {
        usage(stderr);
        return 2;
    }

    char err[512];
    mm_model_config cfg;
    mm_model m = {0};
    if (mm_checkpoint_peek(path, &cfg, err, sizeof err) != 0 ||
        mm_model_init(&m, &cfg, 0, err, sizeof err) != 0 ||
        mm_checkpoint_load(path, &m, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "murmur generate: %s\n", err);
        mm_model_free(&m);
        return 1;
    }
    int T = cfg.n_ctx;
    uint8_t *tokens = calloc((size_t)T + 1, 1);
    size_t plen = strlen(prompt);
    if (!tokens) {
        fprintf(stderr, "murmur generate: out of memory\n");
        mm_model_free(&m);
        return 1;
    }
    mm_rng rng;
    mm_rng_seed(&rng, seed);
    fwrite(prompt, 1, plen, stdout);
    /* The window holds the last (up to T) bytes of prompt + output. */
    int len = plen > (size_t)T ? T : (int)plen;
    memcpy(tokens, prompt + plen - (size_t)len, (size_t)len);
    if (len == 0)
        tokens[len++] = '\n';
    for (long i = 0; i < length; i++) {
        memset(tokens + len, 0, (size_t)(T + 1 - len));
        mm_model_forward(&m, tokens, 1, T);
        int next = sample(mm_model_logits(&m) + (size_t)(len - 1) * MM_VOCAB, temp, &rng);
        putchar(next);
        if (len == T) {
            memmove(tokens, tokens + 1, (size_t)T - 1);
            len--;
        }
        tokens[len++] = (uint8_t)next;
    }
    putchar('\n');
    free(tokens);
    mm_model_free(&m);
    return 0;
}
