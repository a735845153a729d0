/* Refusal codes: their names, which of them mean a configuration that
 * differs between two peers (both from the table in net/counters.h),
 * and the code of a REFUSE frame's reason by its documented prefix
 * (docs/protocol.md, "Refusals"). The reasons are the ones conn.c,
 * transport.c and tls.c write. */
#include "net/transport.h"

#include <string.h>

const char *mm_refusal_name(mm_refusal_code c)
{
    switch (c) {
#define MM_X(code, name, config, words) case MM_REFUSAL_##code: return name;
    MM_REFUSAL_CODES(MM_X)
#undef MM_X
    }
    return "other";
}

bool mm_refusal_is_config(mm_refusal_code c)
{
    switch (c) {
#define MM_X(code, name, config, words) case MM_REFUSAL_##code: return config;
    MM_REFUSAL_CODES(MM_X)
#undef MM_X
    }
    return false;
}

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

mm_refusal_code mm_refusal_classify(const char *r)
{
    static const struct { const char *prefix; mm_refusal_code code; } table[] = {
        {"TLS mismatch:", MM_REFUSAL_TLS_MISMATCH},
        {"two peers claim id", MM_REFUSAL_ID_CLASH},
        {"model fingerprint differs", MM_REFUSAL_FINGERPRINT},
        {"vector length differs", MM_REFUSAL_FINGERPRINT},
        {"algorithm differs", MM_REFUSAL_CONFIG},
        {"codec differs", MM_REFUSAL_CONFIG},
        {"setting differs", MM_REFUSAL_CONFIG},
        {"settings differ", MM_REFUSAL_CONFIG},
        {"topology differs", MM_REFUSAL_TOPOLOGY},
        {"HELLO claims", MM_REFUSAL_IDENTITY},
        {"HELLO from peer", MM_REFUSAL_IDENTITY},
        {"dialled peer", MM_REFUSAL_IDENTITY},
        {"frame claims sender", MM_REFUSAL_IDENTITY},
        {"no peer certificate", MM_REFUSAL_IDENTITY},
        {"certificate ", MM_REFUSAL_IDENTITY},
        {"TLS handshake failed", MM_REFUSAL_TLS},
        {"TLS error", MM_REFUSAL_TLS},
        {"bad version", MM_REFUSAL_VERSION},
        {"bad magic", MM_REFUSAL_NOT_MURMUR},
        {"join refused", MM_REFUSAL_JOIN},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (starts(r, table[i].prefix))
            return table[i].code;
    /* "peer K dialled peer M, but the lower id dials" */
    if (starts(r, "peer ") && strstr(r, ", but the lower id dials"))
        return MM_REFUSAL_IDENTITY;
    return MM_REFUSAL_OTHER;
}
