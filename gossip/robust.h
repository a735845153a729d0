/* Robust mixing: self-centred clipping (He, Karimireddy and Jaggi,
 * "Byzantine-robust decentralized learning via ClippedGossip", 2022), with
 * a radius each peer chooses from its own recent neighbour distances.
 * Numbers in, numbers out: the mixing functions (gossip/mix.h,
 * gossip/choco.h) measure the distances, this module decides the radius
 * and counts, they clip.
 *
 * The rule (docs/node.md, "Robust mixing"): in every mix a neighbour's
 * pull d_j = z_j - z_i (its de-biased parameters, or its public copy under
 * CHOCO, minus ours) is replaced by
 *
 *   clip(d_j) = d_j * min(1, tau / ||d_j||)
 *
 * so z_j is mixed as if it stood at most tau from z_i in its direction,
 * the weight it loses going to z_i. The radius tau is either fixed
 * (--clip-pull X: tau = X) or adaptive (--robust-clip F):
 *
 *   tau = F * the lower median of the last MM_CLIP_WINDOW distances
 *         this peer recorded (this mix's included).
 *
 * Every mix records one distance per in-neighbour: a missing one's last
 * measured distance stands for it (none if it was never measured), so a
 * neighbour present more often than another (async) weighs no more in
 * the window. The lower median of a set of which at least half comes from
 * honest neighbours is at most the largest honest distance in it, whatever
 * the others send. So while honest neighbours make at least half of a
 * peer's in-neighbours (one attacker of two ring neighbours is enough), one
 * mix moves the peer by at most sum_j W_ij tau over its attackers, with
 * tau at most F times the largest honest distance of the window. A
 * distance that is not finite is never recorded and its pull is dropped
 * whole. */
#ifndef MURMUR_ROBUST_H
#define MURMUR_ROBUST_H

#include <math.h>
#include <stdint.h>

/* Distances remembered: 8 mixes of a ring peer, 4 of degree 4. Short, so
 * that the radius follows honest distances as they shrink (by 0.7 a
 * round in pure gossip on a ring of 4); long enough that an honest
 * neighbour missing for a mix or two still holds half of it. */
#define MM_CLIP_WINDOW 16

/* In-neighbours whose last distance is remembered (beyond: the one
 * measured longest ago is forgotten). */
#define MM_CLIP_PEERS 64

typedef struct {
    double fixed;           /* > 0: this radius (--clip-pull) */
    double factor;          /* > 0 (fixed 0): tau from the window, times this */
    double d[MM_CLIP_WINDOW];
    int held, next;         /* distances held, where the next one goes */
    struct {
        uint32_t peer;
        double d;           /* its last finite distance */
        uint64_t when;      /* the mix it was measured in */
    } last[MM_CLIP_PEERS];
    int n_last;
    uint64_t mixes;         /* mixes so far */
    uint64_t clipped;       /* pulls clipped so far (distance above the radius) */
    double radius_max;      /* the largest radius since the caller last cleared it
                             * (INFINITY: no distance yet; 0: no mix yet) */
} mm_clip;

/* A clip rule: a fixed radius (fixed > 0), the adaptive one (factor > 0),
 * or off (both 0). */
mm_clip mm_clip_make(double fixed, double factor);

/* Whether c clips at all (NULL: no). */
static inline int mm_clip_on(const mm_clip *c) { return c && (c->fixed > 0 || c->factor > 0); }

/* The radius for one mix whose in-neighbours peer[0..n) are at distances
 * d[0..n) (NaN: missing): the adaptive rule records them first (a missing
 * one's last distance in its place). INFINITY when no distance was ever
 * measured. Counts the distances above the radius in c->clipped and
 * raises c->radius_max. */
double mm_clip_radius(mm_clip *c, const double *d, const uint32_t *peer, int n);

/* The factor a pull at distance d is scaled by under radius tau: 1, or
 * tau / d when d > tau; 0 for a distance that is not finite (a vector of
 * absurd magnitude whose squares overflowed: nothing of it is mixed). */
static inline double mm_clip_scale(double d, double tau)
{
    return !isfinite(d) ? 0.0 : d <= tau ? 1.0 : tau / d;
}

#endif
