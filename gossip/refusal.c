/* Refusal codes: their names, which of them mean a configuration that
 * differs between two peers, and the code of a REFUSE frame's reason by
 * its documented prefix (docs/protocol.md, "Refusals"). The reasons are
 * the ones conn.c, transport.c and tls.c write. */
#include "gossip/transport.h"

#include <string.h>

const char *mm_refusal_name(mm_refusal_code c)
{
    switch (c) {
    case MM_REFUSAL_NONE: return "none";
    case MM_REFUSAL_TLS_MISMATCH: return "tls_mismatch";
    case MM_REFUSAL_TLS: return "bad_tls";
    case MM_REFUSAL_IDENTITY: return "bad_identity";
    case MM_REFUSAL_ID_CLASH: return "id_clash";
    case MM_REFUSAL_FINGERPRINT: return "bad_fingerprint";
    case MM_REFUSAL_CONFIG: return "bad_config";
    case MM_REFUSAL_TOPOLOGY: return "bad_topology";
    case MM_REFUSAL_VERSION: return "bad_version";
    case MM_REFUSAL_NOT_MURMUR: return "bad_magic";
    case MM_REFUSAL_UNREACHABLE: return "unreachable";
    case MM_REFUSAL_OTHER: break;
    }
    return "other";
}

bool mm_refusal_is_config(mm_refusal_code c)
{
    return c != MM_REFUSAL_NONE && c != MM_REFUSAL_UNREACHABLE && c != MM_REFUSAL_OTHER;
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
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (starts(r, table[i].prefix))
            return table[i].code;
    /* "peer K dialled peer M, but the lower id dials" */
    if (starts(r, "peer ") && strstr(r, ", but the lower id dials"))
        return MM_REFUSAL_IDENTITY;
    return MM_REFUSAL_OTHER;
}
