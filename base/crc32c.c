/* CRC32C (Castagnoli polynomial, reflected 0x82F63B78), the payload checksum
 * of the wire format. Why CRC32C: x86 has an instruction for it (SSE4.2), so
 * it runs at several GB/s, far cheaper than the transfer; it is a standard
 * (iSCSI, ext4) with implementations in every language for other peers.
 * The hardware path is chosen once at run time (__builtin_cpu_supports). */
#include "base/crc32c.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

static uint32_t table[8][256];
static int table_ready;

static void make_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78U & (0U - (c & 1U)));
        table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (uint32_t i = 0; i < 256; i++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

/* Slice-by-8: portable, about 1 byte per cycle. Little-endian hosts only
 * (the whole wire format assumes it; see docs/protocol.md). */
uint32_t mm_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        make_tables();
    const uint8_t *p = buf;
    crc = ~crc;
    while (len && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = table[7][w & 0xFF] ^ table[6][(w >> 8) & 0xFF] ^
              table[5][(w >> 16) & 0xFF] ^ table[4][(w >> 24) & 0xFF] ^
              table[3][(w >> 32) & 0xFF] ^ table[2][(w >> 40) & 0xFF] ^
              table[1][(w >> 48) & 0xFF] ^ table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
    return ~crc;
}

#if defined(__x86_64__)
/* crc32q has a latency of 3 cycles but a throughput of 1 per cycle, so one
 * dependent chain runs at a third of the possible speed. Blocks of 3*STRIDE
 * bytes are done as three independent chains and joined with "shift":
 * the CRC register after STRIDE more zero bytes, a linear map on 32 bits
 * precomputed as 4 byte tables. */
#define STRIDE 4096
static uint32_t shift_tab[4][256];
static int shift_ready;

static uint32_t zeros_sw(uint32_t reg, size_t n) /* raw register, no inversion */
{
    while (n--)
        reg = (reg >> 8) ^ table[0][reg & 0xFF];
    return reg;
}

static void make_shift(void)
{
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        make_tables();
    uint32_t col[32];
    for (int i = 0; i < 32; i++)
        col[i] = zeros_sw(1U << i, STRIDE);
    for (int k = 0; k < 4; k++)
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t r = 0;
            for (int b = 0; b < 8; b++)
                if (v & (1U << b))
                    r ^= col[8 * k + b];
            shift_tab[k][v] = r;
        }
    __atomic_store_n(&shift_ready, 1, __ATOMIC_RELEASE);
}

static inline uint32_t shift(uint32_t r)
{
    return shift_tab[0][r & 0xFF] ^ shift_tab[1][(r >> 8) & 0xFF] ^
           shift_tab[2][(r >> 16) & 0xFF] ^ shift_tab[3][r >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint64_t c = ~crc & 0xFFFFFFFFU;
    while (len && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    if (len >= 3 * STRIDE && !__atomic_load_n(&shift_ready, __ATOMIC_ACQUIRE))
        make_shift();
    while (len >= 3 * STRIDE) {
        uint64_t c1 = 0, c2 = 0;
        const uint8_t *q = p;
        for (size_t i = 0; i < STRIDE; i += 8, q += 8) {
            uint64_t a, b, d;
            memcpy(&a, q, 8);
            memcpy(&b, q + STRIDE, 8);
            memcpy(&d, q + 2 * STRIDE, 8);
            c = _mm_crc32_u64(c, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, d);
        }
        c = shift(shift((uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
        p += 3 * STRIDE;
        len -= 3 * STRIDE;
    }
    while (len >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        c = _mm_crc32_u64(c, a);
        p += 8;
        len -= 8;
    }
    while (len--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

static int hw_state; /* 0 unknown, 1 yes, 2 no */

bool mm_crc32c_is_hw(void)
{
    int s = __atomic_load_n(&hw_state, __ATOMIC_RELAXED);
    if (!s) {
#if defined(__x86_64__)
        __builtin_cpu_init();
        s = __builtin_cpu_supports("sse4.2") ? 1 : 2;
#else
        s = 2;
#endif
        __atomic_store_n(&hw_state, s, __ATOMIC_RELAXED);
    }
    return s == 1;
}

uint32_t mm_crc32c(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
    if (mm_crc32c_is_hw())
        return crc_hw(crc, buf, len);
#endif
    return mm_crc32c_sw(crc, buf, len);
}
