/* Codecs for one vector exchange: how n floats become the bytes of a
 * payload and back. fp32 (as today), bf16, int8 blockwise, topk:F, randk:F
 * and sign. Pure functions over flat vectors: no I/O, no framing, no
 * model; the byte layouts are in docs/protocol.md ("Codec payloads"), the
 * measurements behind the choices in docs/compression.md.
 *
 * Two ways to use a codec:
 *
 *   plain        out = Q(x)                  mm_codec_encode(c, x, NULL, ...)
 *                dst = decode(out)           mm_codec_decode(c, p, len, dst, ...)
 *
 *   CHOCO        out = Q(x - ref) and        mm_codec_encode(c, x, ref, ...)
 *   (gossip/choco.h)  ref += decode(out)
 *                copy += decode(out)         mm_codec_apply(c, p, len, copy, ...)
 *
 * In the CHOCO form the sender's ref (its public copy x_hat of itself) and
 * every receiver's copy of it change by exactly the same floats, computed
 * by the same binary32 operations, so copies that start equal stay equal
 * bit for bit (their CRC32C can be compared). fp32 is the exception that
 * makes the rule exact: its payload is x itself and "apply" sets the copy
 * to it (copy = x, which is what copy += (x - copy) means without the
 * rounding of the subtraction).
 *
 * Thread safety: encoding uses the codec's workspace (one thread at a
 * time per mm_codec); checking, decoding and applying only read the codec
 * and may run on any number of threads at once.
 *
 * No function allocates after mm_codec_new(). */
#ifndef MURMUR_CODEC_H
#define MURMUR_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Codec numbers are stable: a later HELLO may carry them. */
typedef enum {
    MM_CODEC_FP32 = 1,  /* 4 bytes per float, x itself */
    MM_CODEC_BF16 = 2,  /* 2 bytes per float, round to nearest even */
    MM_CODEC_INT8 = 3,  /* 1 byte per float + one f32 scale per block */
    MM_CODEC_TOPK = 4,  /* the k = ceil(F n) largest |values|: values + delta-coded indices */
    MM_CODEC_RANDK = 5, /* k seeded random coordinates: 8-byte key + values */
    MM_CODEC_SIGN = 6,  /* 1 bit per float + one f32 scale (mean |x|) per block */
} mm_codec_kind;

/* Measured in docs/compression.md ("Block size"). */
#define MM_CODEC_INT8_BLOCK 256
#define MM_CODEC_SIGN_BLOCK 32
#define MM_CODEC_BLOCK_MIN 8
#define MM_CODEC_BLOCK_MAX 65536
/* Largest vector a codec takes: indices must fit 32 bits (as MM_WIRE_MAX_VEC_LEN). */
#define MM_CODEC_MAX_N (1ULL << 31)

typedef struct {
    mm_codec_kind kind;
    double frac;     /* topk, randk: F, 0 < F <= 1; else 0 */
    uint32_t block;  /* int8, sign: floats per scale, a power of two in
                        [MM_CODEC_BLOCK_MIN, MM_CODEC_BLOCK_MAX]; else 0 */
} mm_codec_spec;

/* Parses a codec spec: "fp32", "bf16", "int8", "int8:BLOCK", "sign",
 * "sign:BLOCK", "topk:F", "randk:F" (F a decimal fraction in (0, 1], such
 * as 0.01 or 1e-3). 0, or -1 with a sentence in err saying what is wrong
 * and what would be right. */
int mm_codec_parse(const char *text, mm_codec_spec *spec, char *err, size_t errlen);

/* The canonical spec string ("int8:256", "topk:0.01"): parses back to an
 * equal spec, so two peers can compare strings. Returns strlen, as snprintf. */
int mm_codec_format(const mm_codec_spec *spec, char *buf, size_t len);
bool mm_codec_spec_equal(const mm_codec_spec *a, const mm_codec_spec *b);
const char *mm_codec_kind_name(mm_codec_kind kind);

/* What both peers can compute from the spec and n alone (1 <= n <= MM_CODEC_MAX_N):
 * k, the coordinates a sparse codec sends (ceil(F n) in binary64, at least
 * 1; n for the dense codecs), and the payload length bounds in bytes
 * (equal for every codec but topk, whose index stream varies). 0 for an
 * invalid spec or n. */
uint64_t mm_codec_k(const mm_codec_spec *spec, uint64_t n);
uint64_t mm_codec_min_len(const mm_codec_spec *spec, uint64_t n);
uint64_t mm_codec_max_len(const mm_codec_spec *spec, uint64_t n);

/* A codec for vectors of n floats, with the workspace its encoder needs
 * (top-k's candidate arrays; nothing for the others). */
typedef struct mm_codec mm_codec;

mm_codec *mm_codec_new(const mm_codec_spec *spec, uint64_t n, char *err, size_t errlen);
void mm_codec_free(mm_codec *c);
const mm_codec_spec *mm_codec_get_spec(const mm_codec *c);
uint64_t mm_codec_n(const mm_codec *c);
/* Bytes an encoder may write: the size of the caller's output buffer. */
size_t mm_codec_max_bytes(const mm_codec *c);
/* Memory mm_codec_new() allocated, for a peer's memory budget. */
size_t mm_codec_workspace_bytes(const mm_codec *c);

typedef enum {
    MM_CODEC_OK = 0,
    MM_CODEC_E_LENGTH,   /* payload length not the one the format implies */
    MM_CODEC_E_SCALE,    /* a block scale NaN, infinite, negative or too large */
    MM_CODEC_E_VALUE,    /* a value NaN or infinite; an int8 code of -128 */
    MM_CODEC_E_INDEX,    /* top-k: an index past the end, or a malformed varint */
    MM_CODEC_E_PADDING,  /* sign: unused bits of the last byte not zero */
    MM_CODEC_E_INPUT,    /* encoder: x (or x - ref) has a NaN or an infinity */
    MM_CODEC_E_SPACE,    /* encoder: output buffer smaller than mm_codec_max_bytes */
    MM_CODEC_E_OVERFLOW, /* apply/encode: an updated copy value became infinite */
} mm_codec_err;

const char *mm_codec_err_name(mm_codec_err e);

/* Encodes x (ref NULL) or x - ref (ref not NULL) into out (cap bytes, at
 * least mm_codec_max_bytes), *len the bytes written. With ref, ref is
 * updated in the same pass to exactly what mm_codec_apply() makes of a
 * copy equal to it, and *ref_crc (when not NULL) is CRC32C of ref's bytes
 * afterwards. key: randk's sampling key (mm_codec_key; carried in the
 * payload), ignored by the other codecs.
 * Errors: MM_CODEC_E_SPACE (nothing written), MM_CODEC_E_INPUT and
 * MM_CODEC_E_OVERFLOW (a NaN/Inf in the model or absurd magnitudes: ref
 * may be partly updated and must be treated as diverged). */
mm_codec_err mm_codec_encode(mm_codec *c, const float *x, float *ref, uint64_t key,
                             uint8_t *out, size_t cap, size_t *len, uint32_t *ref_crc,
                             char *why, size_t whylen);

/* Validates a payload from an untrusted peer without using it: its exact
 * length, every scale, value, code, index and padding bit. MM_CODEC_OK or
 * the first fault, described in why. Reads only p[0 .. len-1]. */
mm_codec_err mm_codec_check(const mm_codec *c, const uint8_t *p, size_t len,
                            char *why, size_t whylen);

/* dst (n floats) = the decoded vector; zeros where a sparse codec sent
 * nothing. The payload is checked first: on any error dst is untouched. */
mm_codec_err mm_codec_decode(const mm_codec *c, const uint8_t *p, size_t len, float *dst,
                             char *why, size_t whylen);

/* The CHOCO copy update: copy += decoded vector (fp32: copy = x), the same
 * binary32 operations the sender applied to its ref. *copy_crc (when not
 * NULL) is CRC32C of the copy's bytes afterwards (dense codecs compute it
 * in the same pass; sparse ones take one more pass over the copy). The
 * payload is checked first: on a payload error the copy is untouched. On
 * MM_CODEC_E_OVERFLOW (a finite payload drove a copy value to infinity)
 * the copy has been changed and must be treated as diverged. */
mm_codec_err mm_codec_apply(const mm_codec *c, const uint8_t *p, size_t len, float *copy,
                            uint32_t *copy_crc, char *why, size_t whylen);

/* mm_codec_apply for a payload that mm_codec_check, with a codec of the
 * same spec and n, has already passed, unchanged since: the update
 * without the check (the peer checks each body once, on the loop thread,
 * before the transport lends it). Only MM_CODEC_E_OVERFLOW can come back.
 * A payload not so checked may be read out of bounds: builds with
 * assertions check it again. */
mm_codec_err mm_codec_apply_checked(const mm_codec *c, const uint8_t *p, size_t len,
                                    float *copy, uint32_t *copy_crc, char *why, size_t whylen);

/* Parts of a vector (a payload streamed in chunks: docs/protocol.md 6.10).
 * The dense codecs (fp32, bf16, int8, sign) encode coordinates
 * independently, block by block, so floats off .. off+count-1 can be
 * encoded, checked and applied on their own as a payload of `count`
 * floats (the layout of 6.3-6.6 with n = count). Encoding the parts of a
 * vector one after the other, each part starting on a block boundary,
 * gives exactly the floats of the whole encode: the same codes and
 * scales, the same ref after every part (tests/test_codec.c). The sparse
 * codecs select over the whole vector: no parts. */
bool mm_codec_splits(const mm_codec_spec *spec);
/* Payload bytes of a part of count floats (an upper bound for none: 0). */
uint64_t mm_codec_part_len(const mm_codec_spec *spec, uint64_t count);
/* mm_codec_encode of x[off .. off+count-1] (ref likewise, may be NULL) as a
 * payload of count floats into out (cap bytes); *ref_crc: CRC32C of
 * ref[off .. off+count-1] afterwards. off must be a multiple of the block
 * (int8, sign), and count too unless the part ends the vector.
 * MM_CODEC_E_INPUT for a sparse codec or a part out of range or off a
 * block boundary; otherwise the errors of mm_codec_encode. */
mm_codec_err mm_codec_encode_part(mm_codec *c, const float *x, float *ref, uint64_t off,
                                  uint64_t count, uint8_t *out, size_t cap, size_t *len,
                                  uint32_t *ref_crc, char *why, size_t whylen);
/* mm_codec_check of a payload of count floats (1 <= count <= n; a part
 * shorter than n only for a dense codec, else MM_CODEC_E_LENGTH). count
 * = n: mm_codec_check itself. */
mm_codec_err mm_codec_check_part(const mm_codec *c, uint64_t count, const uint8_t *p,
                                 size_t len, char *why, size_t whylen);
/* mm_codec_apply_checked of a part: copy_part (count floats: the copy
 * from the part's first float) += its decoded values; *copy_crc (may be
 * NULL) is CRC32C of those count floats afterwards. */
mm_codec_err mm_codec_apply_part_checked(const mm_codec *c, uint64_t count, const uint8_t *p,
                                         size_t len, float *copy_part, uint32_t *copy_crc,
                                         char *why, size_t whylen);

/* int8's kernels: true makes every codec use the portable loops, even on a
 * CPU where the AVX-512 ones would run; false gives the CPU's choice back.
 * Both give the same codes, scales and floats, bit for bit; this is for
 * the tests that compare them and for measurements. Call it while no
 * codec is in use on another thread. */
void mm_codec_use_portable(bool on);

/* A randk sampling key for one exchange of one sender: distinct senders
 * and exchanges get unrelated coordinates. Any 64-bit key works; this is a
 * convenience (splitmix64 of the three). */
uint64_t mm_codec_key(uint64_t seed, uint32_t sender, uint64_t exchange);

/* The index randk's key selects for stratum s of k (docs/protocol.md):
 * exposed so that tests and other implementations can check the rule. */
uint64_t mm_codec_randk_index(uint64_t key, uint64_t s, uint64_t k, uint64_t n);

#endif
