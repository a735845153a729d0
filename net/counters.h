/* The transport's counters and its refusal reasons, each list written once
 * (libuv's UV_ERRNO_MAP(XX) is the model): every user expands the table
 * with its own X.
 *
 *   MM_TRANSPORT_COUNTERS(X)   X(field, line, explanation)
 *     field        the member of mm_transport_stats and the metrics key of
 *                  the same name (docs/metrics.md)
 *     line         where the peer writes it: MM_CTR_ROUND (every round
 *                  line), MM_CTR_END (the end line), MM_CTR_REFUSED (the
 *                  end line, and summed into its "refused"; the report names
 *                  the commonest), MM_CTR_NONE (counted, for tests and
 *                  monitoring, in no line)
 *     explanation  what one count is, for people (a metrics endpoint's HELP)
 *
 *   MM_REFUSAL_CODES(X)        X(CODE, name, config, words)
 *     CODE         mm_refusal_code MM_REFUSAL_<CODE> (net/transport.h)
 *     name         its name in a verdict ("refusals" of an end or isolated
 *                  line); the name of the counter it is counted in when it
 *                  has one
 *     config       1 when it says the two peers are configured differently
 *                  (retrying will not help: mm_refusal_is_config)
 *     words        what that configuration is, for the report's table
 *
 *   MM_LINK_COUNTERS(X)        X(field)
 *     field        a counter of MM_TRANSPORT_COUNTERS (its explanation is
 *                  the one there) that the transport also counts per peer
 *                  (mm_link_stats, mm_transport_get_link_stats): the bytes
 *                  and vectors of the connections bound to that peer, the
 *                  HELLO included; bytes of a connection never bound to a
 *                  peer (refused before its HELLO, or a stranger's) are in
 *                  the process's counter only
 *
 * The order of MM_TRANSPORT_COUNTERS is the order of the fields and of the
 * keys in the metrics lines. Both tables need nothing but the preprocessor:
 * any room may include this header. */
#ifndef MM_NET_COUNTERS_H
#define MM_NET_COUNTERS_H

enum { MM_CTR_NONE, MM_CTR_ROUND, MM_CTR_END, MM_CTR_REFUSED };

#define MM_TRANSPORT_COUNTERS(X)                                                              \
    X(bytes_sent, MM_CTR_ROUND, "bytes written to peers (frames; TLS records with TLS)")     \
    X(bytes_recv, MM_CTR_ROUND, "bytes read from peers")                                    \
    X(vectors_sent, MM_CTR_NONE, "VECTOR frames sent")                                      \
    X(vectors_recv, MM_CTR_NONE, "VECTOR frames received and handed on")                    \
    X(conns_accepted, MM_CTR_END, "incoming connections")                                   \
    X(conns_dialed, MM_CTR_NONE, "outgoing connections")                                    \
    X(conns_closed, MM_CTR_NONE, "connections closed")                                      \
    X(bad_magic, MM_CTR_REFUSED, "a frame that is not murmur's")                            \
    X(bad_version, MM_CTR_REFUSED, "a frame of another protocol version")                   \
    X(bad_type, MM_CTR_REFUSED, "a frame of a type unknown or not allowed there, or a "     \
                                "non-zero reserved field")                                  \
    X(bad_length, MM_CTR_REFUSED, "a length beyond the vector or any sane bound")           \
    X(bad_checksum, MM_CTR_REFUSED, "a header or payload CRC that does not match")          \
    X(bad_fingerprint, MM_CTR_REFUSED, "another model or vector length")                    \
    X(bad_round, MM_CTR_REFUSED, "a vector whose exchange is outside the window")           \
    X(bad_values, MM_CTR_REFUSED, "a vector holding NaN or Inf")                            \
    X(bad_weight, MM_CTR_REFUSED, "a vector whose weight breaks the algorithm's rule")      \
    X(bad_identity, MM_CTR_REFUSED, "a HELLO or certificate naming another peer")           \
    X(bad_tls, MM_CTR_REFUSED, "a failed TLS handshake")                                    \
    X(frame_timeouts, MM_CTR_REFUSED, "a frame started and not finished in time")           \
    X(peer_timeouts, MM_CTR_REFUSED, "a silent peer, or a handshake not finished in time")  \
    X(flood_refused, MM_CTR_REFUSED, "too many unauthenticated connections from one "       \
                                     "address")                                             \
    X(id_clash, MM_CTR_REFUSED, "connections refused because two peers claim one id")       \
    X(tls_mismatch, MM_CTR_REFUSED, "one side TLS, the other --plaintext (counted on both)") \
    X(pending_refused, MM_CTR_REFUSED, "over --max-pending unauthenticated connections, or " \
                                       "an accept() error libuv reported")                  \
    X(bad_codec, MM_CTR_REFUSED, "a body in another codec, or one its codec refuses")       \
    X(bad_config, MM_CTR_REFUSED, "a HELLO naming another algorithm, codec or setting")     \
    X(bad_topology, MM_CTR_REFUSED, "a HELLO naming another topology digest (counted on "    \
                                    "both sides)")                                          \
    X(not_neighbour, MM_CTR_REFUSED, "a VECTOR from a cluster member that is not an "        \
                                     "in-neighbour (its connection closed)")                \
    X(join_refused, MM_CTR_REFUSED, "elastic runs: a join session refused (its id a live "  \
                                    "member's, no certificate of the CA, a static run)")    \
    X(view_flood, MM_CTR_REFUSED, "elastic runs: a member that changed more membership "    \
                                  "records a second than allowed, or sent a table from "    \
                                  "outside the membership")                                 \
    X(tls_queued_peak, MM_CTR_END, "TLS: the most ciphertext one connection held at once "  \
                                   "(bytes; at most MM_TLS_QUEUE_MAX)")

#define MM_LINK_COUNTERS(X) X(bytes_sent) X(bytes_recv) X(vectors_sent) X(vectors_recv)

#define MM_REFUSAL_CODES(X)                                                                 \
    X(NONE, "none", 0, "")                                                                  \
    X(TLS_MISMATCH, "tls_mismatch", 1, "one side runs TLS, the other --plaintext")          \
    X(TLS, "bad_tls", 1, "TLS handshake failed (certificates of another CA?)")              \
    X(IDENTITY, "bad_identity", 1, "a certificate or HELLO naming another peer")            \
    X(ID_CLASH, "id_clash", 1, "two processes run with one --id")                           \
    X(FINGERPRINT, "bad_fingerprint", 1, "another model (--layers, --width, ...) or vector " \
                                         "length")                                          \
    X(CONFIG, "bad_config", 1, "another --algo, codec or setting (--gossip-steps, ...)")     \
    X(TOPOLOGY, "bad_topology", 1, "another topology file (or schedule, or seed)")          \
    X(VERSION, "bad_version", 1, "another protocol version (another murmur build)")         \
    X(NOT_MURMUR, "bad_magic", 1, "something that is not murmur")                           \
    X(UNREACHABLE, "unreachable", 0, "the dial failed (nothing listens, no route)")         \
    X(JOIN, "join_refused", 1, "a join refused (its id a live member's, or the run "       \
                               "static)")                                                   \
    X(OTHER, "other", 0, "timeouts, malformed frames, floods, a replaced connection")

#endif
