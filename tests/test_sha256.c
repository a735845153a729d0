/* base/sha256.c (libcrypto) against the FIPS 180-4 examples and against Python's
 * hashlib on lengths around the 55/56/64-byte padding boundaries, one-shot
 * and fed in awkward pieces. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"

static void check_hex(const void *data, size_t len, const char *want)
{
    uint8_t d[MM_SHA256_LEN];
    char hex[2 * MM_SHA256_LEN + 1];
    mm_sha256(data, len, d);
    mm_sha256_hex(d, hex);
    assert_string_equal(hex, want);

    /* same digest when fed in pieces of 1, 3, 7, 64, 65 bytes */
    static const size_t pieces[] = {1, 3, 7, 64, 65};
    for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
        mm_sha256_ctx c;
        mm_sha256_init(&c);
        for (size_t off = 0; off < len; off += pieces[k])
            mm_sha256_update(&c, (const uint8_t *)data + off,
                             len - off < pieces[k] ? len - off : pieces[k]);
        mm_sha256_final(&c, d);
        mm_sha256_hex(d, hex);
        assert_string_equal(hex, want);
    }
}

static void test_fips_vectors(void **state)
{
    (void)state;
    check_hex("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_hex("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check_hex(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_million_a(void **state)
{
    (void)state;
    size_t n = 1000000;
    char *a = malloc(n);
    assert_non_null(a);
    memset(a, 'a', n);
    check_hex(a, n, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

static void test_padding_boundaries(void **state)
{
    (void)state;
    /* data[i] = (7i + 3) mod 251; digests from Python's hashlib */
    static const struct { size_t n; const char *hex; } v[] = {
        {55, "1deace58c745f3ecadde68a5923f494c3703fa73f0306483ccb898a5826e8d70"},
        {56, "06dbe23685750e4d3881ded95047abaf93fa8f9c5d3501dc57c717a72ff1398e"},
        {57, "011f4bced20a249afb834d24b3e4eca31ad5ea2bdd1d8a1a564c2d2410398e69"},
        {63, "47fb38b12335c9298d09280515c0666489a189d1554bb0ac1a0740806ce9d8b6"},
        {64, "dfa798724b1a8014994f363e5da7474ed26ce3757fb29e07aa47ad5a9352d37b"},
        {65, "dd2eab5a5507d7717c63ce953d9ac61752c21e664425ad1227054722a0d97f69"},
        {119, "c6e0f435df5d7d265baacca31e0602c00aa22fa6d3819aed664649294c743756"},
        {120, "17eb8960823a644bde3065620bb9d45931fe8993fd8eb692a17aff0fd725db6a"},
        {200, "58571ac1c94ce02ff78ca2556530759ff4b9d60ba9d41bee6bb65d0edea9f1c6"},
    };
    uint8_t data[200];
    for (int i = 0; i < 200; i++)
        data[i] = (uint8_t)((i * 7 + 3) % 251);
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        check_hex(data, v[k].n, v[k].hex);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips_vectors),
        cmocka_unit_test(test_million_a),
        cmocka_unit_test(test_padding_boundaries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
