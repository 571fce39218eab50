/*
 * state.h - the replay's state as bytes, and back: checkpoints.
 *
 * check --follow, which sees every event of a log kept within a budget,
 * saves the replay's state beside the segments now and then
 * (checkpoint.h); a later check of what is left after segments were
 * deleted loads the newest usable one and goes on from there with the pool
 * models, exactly as if it had read the deleted events itself.
 *
 * The bytes are this build's own memory: each layer (the walker, the
 * checks, the driver, each pool model through model.h save/load) writes
 * its structs as they are in memory and then the arrays they point to, and
 * loading puts them back and sets the pointers.  That is what makes a
 * restored replay the same replay: nothing is re-derived, so nothing can
 * come out different.  The price is that only the same build can read
 * them back: every state carries the build's identity (the executable's
 * GNU build-id, or a hash of the executable) and a checksum, and a state
 * from another build, or damaged, is refused as a whole (rp_state_open
 * says why) and the caller goes on as without one.  Pointers to constant
 * data (a model's ops, a re-entrancy point's name) are saved as names or
 * indices, never as addresses.
 *
 * Failure policy: saving cannot fail (memory through xalloc.h).  Loading
 * checks the envelope (magic, version, identity, length, checksum) before
 * anything else reads it; inside, every read is bounds-checked and a short
 * read sets `bad` (later reads return zeros), and a loader that sees `bad`
 * leaves its object destroyable and returns -1.  A state that passed the
 * checksum is trusted field by field: load checkpoints this build wrote,
 * not bytes from strangers.
 */
#ifndef RP_STATE_H
#define RP_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "ptrmap.h"
#include "rangeset.h"

/* The envelope's version: bump it when what a layer saves changes shape in
 * a way the build identity would not catch (it always does today). */
#define RP_STATE_VERSION 1

typedef struct rp_state_w {
    uint8_t *buf;
    size_t len, cap;
} rp_state_w;

typedef struct rp_state_r {
    const uint8_t *p, *end;
    int bad;
} rp_state_r;

void rp_state_w_free(rp_state_w *w);

/* Raw bytes, and n items of size bytes each with their count first. */
void rp_state_put(rp_state_w *w, const void *p, size_t n);
void rp_state_array(rp_state_w *w, const void *p, size_t n, size_t size);
void rp_state_u64(rp_state_w *w, uint64_t v);
void rp_state_str(rp_state_w *w, const char *s);   /* NULL as "" */

/* 0, or -1 (and bad) when fewer than n bytes are left; p is then zeroed. */
int rp_state_get(rp_state_r *r, void *p, size_t n);
/* A malloc'd copy of an array (NULL when empty or bad); *n its count. */
void *rp_state_get_array(rp_state_r *r, size_t *n, size_t size);
uint64_t rp_state_get_u64(rp_state_r *r);
/* A string into out (cap bytes, NUL-terminated); bad if it does not fit. */
void rp_state_get_str(rp_state_r *r, char *out, size_t cap);

/* Containers, exactly (their layout included, so a restored one behaves
 * bit for bit as the saved one).  Loading replaces what *s held. */
void rp_state_ptrmap(rp_state_w *w, const rp_ptrmap *m);
void rp_state_get_ptrmap(rp_state_r *r, rp_ptrmap *m);
void rp_state_rangeset(rp_state_w *w, const rp_rangeset *s);
void rp_state_get_rangeset(rp_state_r *r, rp_rangeset *s);

/* A re-entrancy point's name (one of a model's point_names, or NULL) as
 * indices into rp_models, and back (NULL when unknown). */
void rp_state_point(rp_state_w *w, const char *point);
const char *rp_state_get_point(rp_state_r *r);

/* This build's identity ("build-id 5f3a...", or "exe-hash ..."). */
const char *rp_state_identity(void);

/* The envelope around a finished payload: out gets magic, version,
 * identity, length, checksum, payload (the payload stays w's). */
void rp_state_seal(const rp_state_w *payload, rp_state_w *out);
/* Check the envelope of buf and point *r at its payload: 0, or -1 with why
 * in err ("written by another build of trace-replay (...)"). */
int rp_state_open(const void *buf, size_t len, rp_state_r *r, char *err, size_t errlen);

#endif
