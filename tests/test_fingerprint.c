/* The HELLO fingerprints are what docs/protocol.md 3.1 says, byte for byte,
 * so that a peer in another language can compute them: the model's
 * (mm_model_fingerprint) and a --vector-len run's (mm_vector_fingerprint),
 * against the examples printed there and against the construction spelled
 * out here independently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"
#include "base/sha256.h"
#include "node/node.h"

static void hex(const uint8_t *b, char out[65])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The documented construction: 14 bytes of tag, five int32 LE, one u64 LE. */
static void model_by_the_doc(int L, int C, int H, int T, uint8_t out[32])
{
    uint64_t P = 256ULL * C + (uint64_t)T * C + (uint64_t)L * (12ULL * C * C + 13ULL * C) + 2ULL * C;
    uint8_t buf[42];
    memcpy(buf, "murmur-gpt2-v1", 14);
    int v[5] = {L, C, H, T, 256};
    for (int i = 0; i < 5; i++)
        put_le(buf + 14 + 4 * i, (uint32_t)v[i], 4);
    put_le(buf + 34, P, 8);
    mm_sha256(buf, sizeof buf, out);
}

static void model_fingerprint(void **s)
{
    static const struct { int L, C, H, T; size_t P; const char *hex; } ex[] = {
        {4, 128, 4, 64, 834304, "fb1194e73d6eb0033526acc28c23c6858487a3dba494b9659c841d12d386073a"},
        {2, 64, 4, 64, 120576, "824533c167c03580345b2c51a20401ec6f084677b2be21dd567e844529d25298"},
    };
    for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
        mm_model_config c = mm_model_config_default();
        c.n_layer = ex[i].L, c.d_model = ex[i].C, c.n_head = ex[i].H, c.n_ctx = ex[i].T;
        assert_int_equal(mm_model_param_count(&c), ex[i].P);
        uint8_t a[32], b[32];
        char h[65];
        mm_model_fingerprint(&c, a);
        model_by_the_doc(ex[i].L, ex[i].C, ex[i].H, ex[i].T, b);
        assert_memory_equal(a, b, 32);
        hex(a, h);
        assert_string_equal(h, ex[i].hex);
    }
}

static void vector_fingerprint(void **s)
{
    uint8_t a[32], b[32];
    char h[65];
    mm_vector_fingerprint(1000, a);
    hex(a, h);
    assert_string_equal(h, "2eb0b1eea5d83164805ce9967dc82d2b17aad1145971b9864d44d0a3e7b97c6b");
    mm_sha256("murmur-vector:1000", 18, b);
    assert_memory_equal(a, b, 32);
    mm_vector_fingerprint(1001, b);
    assert_memory_not_equal(a, b, 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_fingerprint),
        cmocka_unit_test(vector_fingerprint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
