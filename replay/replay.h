/*
 * replay.h - the check driver: feeds a log, event by event, to the
 * model-free checks and to one pool model per selected pool.
 *
 * Pool operations are replayed whole: the driver gathers an operation's
 * events (op_begin .. op_end on its thread, with everything nested in it, as
 * the walker nests them: walk.h) and then runs the model; operations nested
 * in it (a collection's finalizers freeing pooled memory) are delivered at
 * the model's re-entrancy points, or after the operation for models without
 * any.  Addresses the real pool chose are followed where the model has a
 * choice, and divergences counted.
 *
 * The driver is a subscriber of a walker: rp_replay_attach puts it on one
 * that also feeds others (the report); rp_replay_event feeds it through a
 * walker of its own.  Use one or the other.
 */
#ifndef RP_REPLAY_H
#define RP_REPLAY_H

#include <stdint.h>

#include "finding.h"
#include "model.h"
#include "trace_format.h"
#include "walk.h"

struct rp_result;

typedef struct rp_options {
    const rp_model_ops *model;  /* every selected pool gets one; NULL: see auto */
    int model_auto;             /* choose by pool name ("cupy", "torch", "bfc") */
    const char *pool;           /* --pool: a name or a decimal id; NULL: all */
    int paranoid;               /* full audit after every operation */
    int keep_going;             /* stats: do not stop at the first violation */
    int series;                 /* keep the reserved/allocated time series */
    /* Does native stack `id` hold a frame of a function whose name contains
     * key?  It places a nested collection at the re-entrancy point it ran
     * at (a model may have several); NULL: at the first point reached. */
    int (*stack_has)(void *ctx, uint32_t id, const char *key);
    /* The function names of native stack `id`, innermost first (NULL for a
     * frame that did not resolve): the innermost one the model's table
     * names places a nested collection (placement.h).  NULL: stack_has. */
    uint32_t (*stack_functions)(void *ctx, uint32_t id, const char **names, uint32_t max);
    void *stack_ctx;
    /* Pool names, for --pool NAME and the automatic model choice. */
    const char *(*pool_name)(void *ctx, uint32_t pool);
    void *pool_name_ctx;
    /* The options the run used (the log's INFO records, --model-option):
     * the value of key as of the events read so far, or NULL.  Each model
     * is configured from them when its pool first appears. */
    const char *(*setting)(void *ctx, const char *key);
    void *setting_ctx;
    /* Told of each violation the moment it is found, before the replay
     * stops (check --follow acts on the traced process from here).  v holds
     * it as rp_replay_result would (violation, op, nested_in, reentries):
     * the first one found is the result's own; with keep_going, each later
     * one (a model that broke stops there, so at most one per pool, and
     * every model-free violation) comes in a result made for the call. */
    void (*on_violation)(void *ctx, const struct rp_result *v);
    void *on_violation_ctx;
} rp_options;

/* A pool operation and the collections nested in it, for reports. */
typedef struct rp_opref {
    uint64_t seq;               /* its op_begin (or the bare pool event) */
    uint32_t kind;              /* enum tf_kind of that event */
    uint32_t op;                /* enum tf_pool_op, 0 for a bare event */
    uint32_t pool;
    uint64_t arg;
} rp_opref;

#define RP_MAX_NESTED 8
typedef struct rp_reentry {
    uint64_t op_seq;            /* the operation re-entered */
    uint64_t gc_seq;            /* the collection (0: a nested op without one) */
    uint64_t nested_seq;        /* first nested operation delivered */
    uint32_t nested_ops;        /* how many were delivered */
    uint32_t gc_native_stack, gc_py_stack; /* where the collection started */
    const char *point;          /* the model's re-entrancy point; NULL: after the op */
} rp_reentry;

/* An invariant broken at the step a replay stopped at. */
#define RP_MAX_BROKEN 16
typedef struct rp_broken {
    char invariant[40];
    char message[480];
    int warning;               /* the model calls it a warning (it lives with it) */
} rp_broken;

/* What a model said about the run (an option it does not follow, one it
 * had to guess), once each. */
#define RP_MAX_NOTES 8
typedef struct rp_note_text { char text[320]; } rp_note_text;

typedef struct rp_series_point {
    uint64_t seq, reserved, allocated, segments, free_bytes, largest_free;
} rp_series_point;

typedef struct rp_result {
    uint64_t events;
    int violated;
    int by_model;                      /* a pool model broke it (else the model-free checks) */
    rp_finding violation;
    rp_opref op;                       /* top-level operation at fault (seq 0: none) */
    rp_opref nested_in[RP_MAX_NESTED]; /* enclosing operations of the event, outermost first */
    uint32_t nnested;
    rp_reentry reentries[RP_MAX_NESTED]; /* re-entries during that operation */
    uint32_t nreentries;
    /* Every invariant broken at that step, the violation's first: a full
     * audit of the model once the operation stopped. */
    rp_broken broken[RP_MAX_BROKEN];
    uint32_t nbroken;
    uint64_t matched, diverged;        /* fidelity */
    uint64_t first_diverged_seq;       /* where the model first left the pool */
    uint64_t diverged_before_violation; /* divergences before the violation's event */
    rp_note_text notes[RP_MAX_NOTES];  /* the models' notes, in order */
    uint32_t nnotes, notes_dropped;
    uint64_t ambiguous;                /* collections no stack placed whose outcomes differ */
    uint64_t first_ambiguous_seq;      /* the first one's gc_start (warnings: "ambiguity") */
    uint64_t unplaced;                 /* collections nested in pool operations that no stack placed */
    uint64_t first_unplaced_seq;       /* the first one's gc_start */
    uint64_t peak_reserved, peak_allocated;
    uint64_t peak_reserved_seq, peak_allocated_seq;
    uint64_t ops;                      /* operations replayed through models */
    rp_series_point *series;           /* with options.series */
    uint64_t nseries;
    uint64_t seg_sizes[64];            /* segments obtained, by log2 of size */
    uint64_t history_lost_seq;         /* events were missing before this one (0: none):
                                          partial checks and no pool models from here */
} rp_result;

typedef struct rp_replay rp_replay;

rp_replay *rp_replay_new(const rp_options *o);
void rp_replay_free(rp_replay *r);

/* Subscribe the driver (model-free checks, then the models) to a walker
 * someone else feeds; it asks to be given nothing more once it stopped. */
void rp_replay_attach(rp_replay *r, rp_walk *w);

/* Feed events in seq order, through the driver's own walker.  Returns 1
 * once the replay has stopped (a violation, or rp_replay_stop); later events
 * are ignored. */
int rp_replay_event(rp_replay *r, const tf_event *e);
/* The log is over (after rp_walk_end of an attached walker): apply
 * operations left open, and (clean_end) report what is still live. */
void rp_replay_finish(rp_replay *r, int clean_end);
void rp_replay_stop(rp_replay *r);
/* Events are missing before first_seq, the next event fed (segments of a
 * log kept within a budget were deleted: FORMAT.md section 13).  What came
 * before is a whole prefix: operations still open in it are applied as at
 * the end of a log.  From here the model-free checks go on with partial
 * history (rp_checks_forget) and every pool goes without a model (its
 * state at first_seq is unknown).  The driver calls it itself for an event
 * the reader flagged TF_EVENT_AFTER_GAP. */
void rp_replay_history_lost(rp_replay *r, uint64_t first_seq);

/* ------------------------------------------------------------ checkpoints
 *
 * The replay's whole state after the events fed so far (state.h), saved
 * between any two events (rp_replay_saveable: not after it stopped; the
 * operations being gathered and the open collections are kept), and loaded
 * into a replay fresh from rp_replay_new with the same options, which then
 * goes on with the next event exactly as the saved one would have: the
 * same findings, notes, figures and verdict.  The state holds the
 * driver's own walker (rp_replay_event), not an attached one. */
struct rp_state_w;
struct rp_state_r;
int rp_replay_saveable(const rp_replay *r);
/* Operations being gathered (open on some thread, not yet run through a model). */
size_t rp_replay_gathering(const rp_replay *r);
void rp_replay_save(const rp_replay *r, struct rp_state_w *w);
/* 0, or -1 with why in err (other options, a model this build lacks, bytes
 * that do not read): the replay is then only fit for rp_replay_free. */
int rp_replay_load(rp_replay *r, struct rp_state_r *st, char *err, size_t errlen);
/* Every stack id the state holds through m, for a state written into
 * another log (minimize's), whose stacks are numbered afresh (NULL:
 * forgotten).  The events of operations being gathered keep theirs through
 * m too: the placement of their collections depends on them. */
void rp_replay_map_stacks(rp_replay *r, const rp_stack_map *m);

const rp_result *rp_replay_result(const rp_replay *r);
/* Warnings from the model-free checks. */
uint32_t rp_replay_warnings(const rp_replay *r, const rp_finding **list, uint64_t *total);
/* How many of the pools met so far --pool selected (all of them without). */
uint32_t rp_replay_pools_selected(const rp_replay *r);
/* Each modelled pool, in order of first appearance: id, model, final stats. */
uint32_t rp_replay_pool_count(const rp_replay *r);
int rp_replay_pool_at(const rp_replay *r, uint32_t i, uint32_t *pool, const rp_model_ops **model,
                      rp_model_stats *st);

/* ---------------------------------------------------------------- explore */

/* Called right before each top-level operation of a modelled pool runs
 * through its model (op: that operation). */
typedef void (*rp_probe_hook)(void *ctx, rp_replay *r, const rp_opref *op);
void rp_replay_set_probe(rp_replay *r, rp_probe_hook hook, void *ctx);

/* explore's side of a trial: what to inject, and what it broke. */
typedef struct rp_trial rp_trial;
typedef struct rp_trial_host {
    void *ctx;
    /* The operation reached the re-entrancy point the trial is about: free
     * blocks re-entrantly with rp_trial_free, as a collection would. */
    void (*inject)(void *ctx, rp_trial *t);
    /* An invariant broke (at: the operation's event); the trial stops. */
    void (*violation)(void *ctx, const rp_finding *f);
} rp_trial_host;

/* From inside the hook: run the pending operation on a scratch copy of its
 * pool's model, with h injecting at its re-entrancy point number `point`
 * (0-based) and the operation's nested operations delivered as in the
 * replay.  Nothing of the replay changes.  Returns 1 (and *where, the
 * point's name) when an invariant broke, 0 when the operation stayed sound,
 * -1 when it reaches fewer re-entrancy points. */
int rp_replay_trial(rp_replay *r, int point, const rp_trial_host *h, const char **where);
/* From h->inject: free the recorded block ptr (as the log names it). */
void rp_trial_free(rp_trial *t, uint64_t ptr);

#endif
