/* `murmur node --metrics-addr HOST:PORT`: the peer's Prometheus endpoint
 * (docs/metrics.md, "Prometheus endpoint"). The training thread publishes
 * what a scrape shows once a round (mm__exporter_publish: a copy under a
 * lock, a few kilobytes); the HTTP server (node/http.c) runs on its own
 * threads, MHD's, and formats that copy when /metrics is asked for. Neither
 * the training thread nor the loop thread ever waits for a client: a scrape
 * holds the lock only for a memcpy. Internal to node/. */
#ifndef MURMUR_EXPORTER_H
#define MURMUR_EXPORTER_H

#include <stdbool.h>
#include <stdint.h>

#include "net/transport.h"
#include "node/algo_choco.h"

/* Neighbours listed per peer (in-neighbours of the current round). */
#define MM__LIVE_MAX_NBRS 64

/* mm__mbox's peer states, as the endpoint names them. */
typedef enum { MM__LINK_UNKNOWN, MM__LINK_CONNECTING, MM__LINK_UP, MM__LINK_DOWN,
               MM__LINK_GONE } mm__link_state;

typedef struct {
    uint32_t id;
    bool present;            /* mixed in the round's first exchange */
    double dist;             /* ||x_i - x_j|| then (NaN when absent) */
    mm__link_state link;
    bool refused;            /* refused for a configuration that differs */
} mm__live_nbr;

/* What a scrape shows: the training thread's view after its last round. */
typedef struct {
    uint32_t peer, n_peers;
    const char *algo, *topology, *codec;   /* static strings (the config's) */
    char outer[160];         /* --outer: "nesterov (lr 0.7, momentum 0.9, H 8)"; "" none */
    int64_t round;           /* rounds completed */
    int64_t steps;           /* optimizer steps */
    int64_t exchanges;       /* this round's */
    double loss, lr;
    double t_compute, t_comm, t_wait;      /* cumulative seconds */
    bool have_eval;
    int64_t eval_round;
    double val_loss, val_acc;
    bool have_xi;
    double xi_est;
    int n_nbrs;
    mm__live_nbr nbr[MM__LIVE_MAX_NBRS];
    mm_transport_stats st;
    uint64_t stale_dropped, mix_refused, skipped_sends, deferred_sends;
    bool isolated;
    double alone_s;
    bool choco;
    mm__choco_stats cs;
    bool clip;               /* --clip-pull or --robust-clip (gossip/robust.h) */
    double clip_radius;      /* the last round line's clip_radius (+Inf: none measured) */
    uint64_t pulls_clipped;  /* pulls beyond their radius so far */
    bool elastic;            /* an elastic run (docs/membership.md): */
    uint32_t view_n;         /* ... members in the view of the last round */
    uint64_t view_changes;   /* ... views that differed from the round before */
    bool pace;               /* --deadline learn or --fit-work (node/pace.h): */
    double deadline_s;       /* ... the last round's wait bound after its compute */
    double waited_s;         /* ... what it waited after its compute */
    int64_t paced_by;        /* ... whose vector ended that wait (own id: its compute did) */
    int batch, steps_done;   /* ... its batch and local steps */
    uint64_t cut_total, behind_total, extra_steps_total;
    bool ended;
} mm__live;

typedef struct mm__exporter mm__exporter;

/* Starts serving on addr (HOST:PORT; a non-loopback host without a token
 * is served with a warning). NULL with the reason in err. */
mm__exporter *mm__exporter_start(const char *addr, const char *token, uint32_t n_peers,
                                 char *err, size_t errlen);
void mm__exporter_stop(mm__exporter *e);
/* Training thread, once a round: the new state and, unless NULL, the
 * transport's counters per peer (n_peers of them), both copied. */
void mm__exporter_publish(mm__exporter *e, const mm__live *l, const mm_link_stats *links);

#endif
