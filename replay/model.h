/*
 * model.h - the one interface every pool model implements.
 *
 * A model re-implements one pool's placement algorithm over plain arrays.
 * The driver (replay.c) calls it once per pool operation found in the log and
 * offers it three services through rp_host: a new segment when the model
 * would grow, a re-entrancy point where the real code could run a garbage
 * collection (nested events are delivered there), and the report of a broken
 * invariant.  Models never see the log; the driver never sees a model's
 * insides.
 */
#ifndef RP_MODEL_H
#define RP_MODEL_H

#include <stdint.h>

typedef struct rp_host {
    void *ctx;
    /* The real code could run a collection here: the driver applies the
     * operations nested in the current one, re-entering the model. */
    void (*reenter)(void *ctx, const char *point);
    /* The model needs a new segment of size bytes: its base address, or 0
     * when the device has no memory for it (the log says so). */
    uint64_t (*segment)(void *ctx, uint64_t size);
    /* An invariant broke.  Models return RP_BROKEN right after. */
    void (*violation)(void *ctx, const char *invariant, const char *message);
    /* Something worth saying that does not stop the replay (fragmentation
     * the real pool also has). */
    void (*warning)(void *ctx, const char *invariant, const char *message);
    /* Among equal candidates, prefer this address (the real pool's choice). */
    uint64_t hint;
    /* 1 for the audit the driver runs after a violation, to list every
     * invariant broken at that step: rp_violate reports and returns RP_OK, so
     * check() goes on, and warnings said once are said again. */
    int audit_all;
} rp_host;

/* Results of model calls.  RP_UNKNOWN: the model holds no such block or
 * segment (it diverged from the real pool earlier); the driver counts it. */
enum { RP_OK = 0, RP_BROKEN = 1, RP_NOMEM = 2, RP_UNKNOWN = 3 };

typedef struct rp_model_stats {
    uint64_t reserved;      /* bytes in segments */
    uint64_t allocated;     /* bytes handed out (after rounding) */
    uint64_t free_bytes;    /* bytes in free blocks */
    uint64_t largest_free;  /* largest free block */
    uint64_t free_blocks;
    uint64_t segments;
} rp_model_stats;

typedef struct rp_model_ops {
    const char *name;       /* --model NAME */
    const char *summary;    /* one line for --help */
    void *(*create)(void);
    void (*destroy)(void *m);
    /* dst := src, reusing dst's buffers (explore checkpoints per operation). */
    void (*copy)(void *dst, const void *src);
    /* Serve a request of size bytes on stream.  RP_OK with *ptr and *granted,
     * RP_NOMEM when the device refused a segment, RP_BROKEN on a violation. */
    int (*alloc)(void *m, uint64_t size, uint64_t stream, const rp_host *h,
                 uint64_t *ptr, uint64_t *granted);
    /* Take ptr back.  nested: the free runs inside another operation of the
     * same pool (a collection re-entered it). */
    int (*free)(void *m, uint64_t ptr, int nested, const rp_host *h);
    /* The log shows the pool gave this segment back to the device.
     * RP_UNKNOWN when the model does not hold it whole and free. */
    int (*release)(void *m, uint64_t base, const rp_host *h);
    /* Check invariants: the cheap checks of what the last operations
     * touched, or (full) an audit of the whole state. */
    int (*check)(void *m, int full, const rp_host *h);
    /* detail: also free_blocks and largest_free (a walk of the free
     * structures); without it, only the counters, at no cost. */
    void (*stats)(const void *m, rp_model_stats *s, int detail);
    /* How many re-entrancy points the operation (TF_POOL_OP_ALLOC of arg
     * bytes, or TF_POOL_OP_FREE of address arg) would reach, at most: explore
     * skips the others without copying the model.  NULL for models that never
     * call h->reenter (the driver then applies nested operations after the
     * one they interrupted). */
    int (*points)(const void *m, uint32_t op, uint64_t arg, uint64_t stream, uint64_t hint);
    /* The re-entrancy points h->reenter is called with, NULL-terminated (or
     * NULL).  The text before ':' names the function where the collection
     * starts ("_Chunk.split" -> chunk_split): the driver matches it against
     * a nested collection's native stack to deliver it where it ran. */
    const char *const *point_names;
} rp_model_ops;

extern const rp_model_ops rp_model_cupy, rp_model_cupy5, rp_model_cupy_next,
    rp_model_tf_bfc, rp_model_torch;

/* NULL-terminated list, in --help order. */
extern const rp_model_ops *const rp_models[];
const rp_model_ops *rp_model_find(const char *name);


/* The byte counts every model keeps of its state. */
typedef struct rp_model_counts {
    uint64_t reserved, allocated, free_bytes, segments;   /* as in rp_model_stats */
} rp_model_counts;

/* The accounting invariant: allocated + free == reserved. */
int rp_counts_check(const rp_model_counts *c, const rp_host *h);
/* *st from the counts alone: the free-set figures zero, for the model's walk. */
void rp_counts_stats(const rp_model_counts *c, rp_model_stats *st);

/* Report through h->violation with a formatted message; returns RP_BROKEN
 * (RP_OK in an audit_all audit). */
int rp_violate(const rp_host *h, const char *invariant, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same through h->warning; returns RP_OK. */
int rp_warn(const rp_host *h, const char *invariant, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
