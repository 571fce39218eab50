/*
 * model.h - the one interface every pool model implements.
 *
 * A model re-implements one pool's placement algorithm over plain arrays.
 * The driver (replay.c) calls it once per pool operation found in the log and
 * offers it services through rp_host: the device's answer when the model
 * asks for memory (in the order the log shows the real pool asking), a
 * re-entrancy point where the real code could run a garbage collection
 * (nested events are delivered there), the segments the model gives back on
 * its own, and the report of a broken invariant.  Models never see the log;
 * the driver never sees a model's insides.
 *
 * Failure policy: a model never aborts on what a log makes it do.  What it
 * cannot follow it says (RP_UNKNOWN, a divergence the driver counts, or a
 * note); what the real pool could not have done is a violation.
 */
#ifndef RP_MODEL_H
#define RP_MODEL_H

#include <stdint.h>

struct rp_state_w;
struct rp_state_r;

typedef struct rp_host {
    void *ctx;
    /* The real code could run a collection here (one of the model's
     * point_names): the driver delivers the nested operations that ran
     * there, re-entering the model. */
    void (*reenter)(void *ctx, const char *point);
    /* The model asks the device for *size bytes, at address `at` (a mapping
     * the model predicts) or anywhere when at is 0.  Each call stands for
     * the operation's next device allocation attempt in the log, so a
     * model's out-of-memory ladder meets the refusals the real pool met.
     * Returns the base, or 0 when the device refused; after a refusal that
     * was not for lack of memory (nothing a pool's ladder retries), *size
     * is 0.  *size 0 asks for whatever size the log shows (a model
     * learning an option from the log); the log's size comes back in
     * *size. */
    uint64_t (*segment)(void *ctx, uint64_t *size, uint64_t at);
    /* The model gave [base, base + size) back to the device on its own (its
     * out-of-memory ladder, a garbage collection of free regions): the
     * driver matches it with the log's next release in the operation. */
    void (*released)(void *ctx, uint64_t base, uint64_t size);
    /* An invariant broke.  Models return RP_BROKEN right after. */
    void (*violation)(void *ctx, const char *invariant, const char *message);
    /* Something worth saying that does not stop the replay (fragmentation
     * the real pool also has). */
    void (*warning)(void *ctx, const char *invariant, const char *message);
    /* Said once, next to the verdict: the run used something the model does
     * not follow, or the model had to guess an option. */
    void (*note)(void *ctx, const char *text);
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

/* The options a run used, as the log recorded them: INFO records (the
 * tracer writes the allocator environment as "env:NAME"; importers write
 * "torch.alloc_conf", "bfc.memory_limit", ...) and --model-option, which
 * wins.  get returns the value or NULL. */
typedef struct rp_settings {
    const char *(*get)(void *ctx, const char *key);
    void *ctx;
} rp_settings;

/* Where a collection that started in a function runs, for the driver to
 * place a nested collection by its gc_start native stack (the innermost
 * frame a model's table names decides). */
enum rp_place_kind {
    RP_PLACE_POINT,         /* at the re-entrancy point `point` */
    RP_PLACE_OUTSIDE,       /* outside the bookkeeping: after the operation's work */
    RP_PLACE_UNSURE,        /* a function whose callees (inlined, or not
                             * named) hold points: any point, or outside */
};

typedef struct rp_place {
    const char *function;   /* how symbol names end ("append_to_free_list",
                             * matching "__pyx_f_..._append_to_free_list" and
                             * "append_to_free_list.isra.0"), lower case */
    enum rp_place_kind kind;
    const char *point;      /* RP_PLACE_POINT: the start of the names of the
                             * points it holds ("_compact_index:" for both of
                             * that function's points) */
} rp_place;

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
     * same pool (a collection re-entered it); whether the pool's lock was
     * held there the model knows itself (it called h->reenter). */
    int (*free)(void *m, uint64_t ptr, int nested, const rp_host *h);
    /* The log shows the pool gave [base, base + size) back to the device
     * (size 0: the whole segment at base).  RP_UNKNOWN when the model does
     * not hold it free. */
    int (*release)(void *m, uint64_t base, uint64_t size, const rp_host *h);
    /* Check invariants: the cheap checks of what the last operations
     * touched, or (full) an audit of the whole state. */
    int (*check)(void *m, int full, const rp_host *h);
    /* detail: also free_blocks and largest_free (a walk of the free
     * structures); without it, only the counters, at no cost. */
    void (*stats)(const void *m, rp_model_stats *s, int detail);
    /* How many re-entrancy points inside the bookkeeping the operation
     * (TF_POOL_OP_ALLOC of arg bytes, or TF_POOL_OP_FREE of address arg)
     * would reach, at most: explore skips the others without copying the
     * model.  NULL for models that never call h->reenter there. */
    int (*points)(const void *m, uint32_t op, uint64_t arg, uint64_t stream, uint64_t hint);
    /* The re-entrancy points h->reenter is called with, NULL-terminated (or
     * NULL). */
    const char *const *point_names;
    /* The functions of the real pool, for placing a nested collection by
     * its stack (NULL-terminated by function == NULL; or NULL). */
    const rp_place *places;
    /* Before the first operation: the run's options.  Options the model
     * does not follow, or had to guess, go to h->note. */
    void (*configure)(void *m, const rp_settings *s, const rp_host *h);
    /* For people: the versions and options the model follows, and what it
     * does with a log it cannot follow (docs/models.md repeats it). */
    const char *doc;
    /* A checkpoint of the model's whole state (state.h: this build's own
     * bytes), and back into a model fresh from create() and configure():
     * 0, or -1 when the bytes do not read (the model is then only fit for
     * destroy).  A restored model behaves exactly as the saved one. */
    void (*save)(const void *m, struct rp_state_w *w);
    int (*load)(void *m, struct rp_state_r *r);
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
/* A formatted h->note (nothing when the host takes none). */
void rp_note(const rp_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* h->released, when the host takes it. */
void rp_released(const rp_host *h, uint64_t base, uint64_t size);
/* h->segment for exactly size bytes anywhere: the base, 0 when refused.
 * *fatal (when not NULL) says the refusal was not for lack of memory: the
 * pool's out-of-memory ladder ends there. */
uint64_t rp_segment(const rp_host *h, uint64_t size, int *fatal);

/* Settings helpers: the first of the keys that is set (NULL-terminated
 * list), or NULL; a boolean ("true"/"1"/"yes" or "false"/"0"/"no", any
 * case: 1 or 0, -1 when unset or neither); a byte count with an optional
 * k/M/G suffix (powers of 1024; 0 when unset or malformed). */
const char *rp_setting(const rp_settings *s, const char *const *keys);
int rp_setting_bool(const rp_settings *s, const char *const *keys);
uint64_t rp_setting_bytes(const rp_settings *s, const char *const *keys);

#endif
