/* test_driver.c - the check driver on scenario files (evtext): model-free
 * checks, re-entrancy delivery, fidelity, explore and minimize, all on
 * events in memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evtext.h"
#include "explore.h"
#include "minimize.h"
#include "replay.h"
#include "source.h"

static int failures;
#define CHECK(cond)                                                                                                \
    do {                                                                                                           \
        if (!(cond)) {                                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                              \
            failures++;                                                                                            \
        }                                                                                                          \
    } while (0)

static const char *dir;

static void load(const char *name, evtext *t)
{
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (evtext_load(path, t, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
}

/* A stand-in for symbolisation in the scenarios: a stack whose innermost
 * ip is 0x401800 is in CuPy's _append_to_free_list (where seed 000's
 * collection started). */
static const evtext *named_log;

static int named_stack_has(void *ctx, uint32_t id, const char *key)
{
    (void)ctx;
    if (!named_log || !id || id > named_log->n || !named_log->stacks[id - 1].n)
        return 0;
    return named_log->stacks[id - 1].ips[0] == 0x401800 &&
           strstr("__pyx_f_4cupy_4cuda_6memory__append_to_free_list", key) != NULL;
}

static rp_options opts(const rp_model_ops *m)
{
    rp_options o;
    memset(&o, 0, sizeof o);
    o.model = m;
    o.stack_has = named_stack_has;
    return o;
}

/* Replay a scenario; returns the replay (caller frees). */
static rp_replay *run(const char *name, const rp_model_ops *m, int paranoid)
{
    evtext t;
    load(name, &t);
    rp_options o = opts(m);
    o.paranoid = paranoid;
    named_log = &t;
    rp_replay *r = rp_replay_new(&o);
    for (size_t i = 0; i < t.n; i++)
        if (rp_replay_event(r, &t.ev[i]))
            break;
    rp_replay_finish(r, t.has_end);
    named_log = NULL;
    evtext_free(&t);
    return r;
}

static void expect(const char *name, const rp_model_ops *m, const char *invariant, uint64_t seq)
{
    rp_replay *r = run(name, m, 0);
    const rp_result *res = rp_replay_result(r);
    if (!invariant) {
        CHECK(!res->violated);
        if (res->violated)
            fprintf(stderr, "  %s: unexpected %s: %s\n", name, res->violation.invariant, res->violation.message);
    } else {
        CHECK(res->violated && !strcmp(res->violation.invariant, invariant));
        if (!res->violated || strcmp(res->violation.invariant, invariant))
            fprintf(stderr, "  %s: wanted %s, got %s\n", name, invariant,
                    res->violated ? res->violation.invariant : "nothing");
        CHECK(!seq || res->violation.at.seq == seq);
        if (seq && res->violation.at.seq != seq)
            fprintf(stderr, "  %s: at seq %llu, wanted %llu\n", name, (unsigned long long)res->violation.at.seq,
                    (unsigned long long)seq);
    }
    rp_replay_free(r);
}

static void story(void)
{
    /* cupy5: the outer free's pool_free (seq 17) breaks the order; the
     * re-entry is reported with its collection (seq 10). */
    rp_replay *r = run("cupy5_reentry.txt", &rp_model_cupy5, 0);
    const rp_result *res = rp_replay_result(r);
    CHECK(res->violated && !strcmp(res->violation.invariant, "sorted_index"));
    CHECK(res->violation.at.seq == 15);
    CHECK(res->op.seq == 9 && res->op.op == TF_POOL_OP_FREE && res->op.arg == 0x100000);
    CHECK(res->nreentries == 1 && res->reentries[0].gc_seq == 10 && res->reentries[0].nested_seq == 11);
    CHECK(res->reentries[0].point && strstr(res->reentries[0].point, "set()"));
    CHECK(res->matched == 4 && res->diverged == 0);  /* two segments, two pointers */
    rp_replay_free(r);
    /* cupy (5.4+): the same log is clean; paranoid audits agree. */
    expect("cupy5_reentry.txt", &rp_model_cupy, NULL, 0);
    r = run("cupy5_reentry.txt", &rp_model_cupy, 1);
    CHECK(!rp_replay_result(r)->violated);
    rp_replay_free(r);
    /* cupy-next queues the nested free: clean as well. */
    expect("cupy5_reentry.txt", &rp_model_cupy_next, NULL, 0);
    /* Without a model, the log is clean: the bug is in the pool's insides. */
    expect("cupy5_reentry.txt", NULL, NULL, 0);
}

/* A stand-in for symbolisation: ip 0xa11 is in the function gc_site. */
static const char *gc_site;
static evtext where_log;

static int fake_stack_has(void *ctx, uint32_t id, const char *key)
{
    (void)ctx;
    if (!id || id > where_log.n || !gc_site)
        return 0;
    const uint64_t *ips = where_log.stacks[id - 1].ips;
    return ips[0] == 0xa11 && strstr(gc_site, key) != NULL;
}

static const char *where(const char *site)
{
    static char inv[64];
    gc_site = site;
    rp_options o = opts(&rp_model_cupy5);
    o.stack_has = fake_stack_has;
    rp_replay *r = rp_replay_new(&o);
    for (size_t i = 0; i < where_log.n; i++)
        if (rp_replay_event(r, &where_log.ev[i]))
            break;
    rp_replay_finish(r, 1);
    const rp_result *res = rp_replay_result(r);
    snprintf(inv, sizeof inv, "%s", res->violated ? res->violation.invariant : "");
    if (res->violated)
        CHECK(res->nreentries == 1 && !strcmp(res->reentries[0].point, "_append_to_free_list: set()"));
    rp_replay_free(r);
    return inv;
}

static void reentry_point(void)
{
    load("cupy5_where.txt", &where_log);
    CHECK(!strcmp(where("__pyx_f_4cupy_4cuda_6memory__append_to_free_list"), "sorted_index"));
    CHECK(!strcmp(where("append_to_free_list"), "sorted_index"));
    CHECK(!strcmp(where("chunk_split"), ""));           /* ran in _Chunk.split: sound */
    CHECK(!strcmp(where("__pyx_f_4cupy_4cuda_6memory_6_Chunk_split"), ""));
    CHECK(!strcmp(where("unrelated_function"), ""));    /* unknown: the first point, the split */
    evtext_free(&where_log);
}

static void fidelity(void)
{
    /* The log ends inside a request: its unknown answer is not compared. */
    rp_replay *r = run("cut_in_request.txt", &rp_model_cupy, 1);
    const rp_result *cut = rp_replay_result(r);
    CHECK(!cut->violated && cut->matched == 2 && cut->diverged == 0);  /* 1 segment, 1 pointer */
    if (cut->diverged)
        fprintf(stderr, "  cut_in_request.txt: %llu diverged\n", (unsigned long long)cut->diverged);
    rp_replay_free(r);
    r = run("cupy_choice.txt", &rp_model_cupy, 1);
    const rp_result *res = rp_replay_result(r);
    CHECK(!res->violated);
    CHECK(res->matched == 3 + 4 && res->diverged == 1);  /* 3 segments, 4 pointers; 1 impossible pointer */
    rp_replay_free(r);
    r = run("torch_segments.txt", &rp_model_torch, 1);
    res = rp_replay_result(r);
    CHECK(!res->violated && res->matched == 6 && res->diverged == 0);  /* 2 segments, 4 pointers */
    rp_replay_free(r);
    /* The out-of-memory ladder: refusal, release, retry; then three refusals
     * the model predicts too (2 segments, 2 pointers, 4 refusals, 1 release). */
    r = run("cupy_oom.txt", &rp_model_cupy, 1);
    res = rp_replay_result(r);
    CHECK(!res->violated && res->diverged == 0 && res->matched == 9);
    const rp_finding *w;
    uint64_t total;
    rp_replay_warnings(r, &w, &total);
    CHECK(total == 5 && !strcmp(w[0].invariant, "alloc_failed"));  /* four refusals, one block live at the end */
    rp_replay_free(r);
    /* tf-bfc would have taken a 2 MiB region for 5 MiB: the segment and
     * its addresses diverge, and the replay goes on. */
    r = run("torch_segments.txt", &rp_model_tf_bfc, 1);
    res = rp_replay_result(r);
    CHECK(!res->violated && res->diverged > 0);
    rp_replay_free(r);
}

static void model_free(void)
{
    expect("overlap.txt", NULL, "overlap", 2);
    expect("vmm_handles.txt", NULL, NULL, 0);
    expect("vmm_handle_twice.txt", NULL, "overlap", 2);
    expect("double_free.txt", NULL, "double_free", 3);
    expect("unknown_free.txt", NULL, "free_unknown", 2);
    expect("outside_segment.txt", NULL, "outside_segment", 3);
    expect("segment_in_use.txt", NULL, "segment_in_use", 3);
    expect("zero_size.txt", NULL, NULL, 0);
    expect("nested_other.txt", NULL, NULL, 0);
    /* Live blocks at a clean end are warnings, not violations. */
    rp_replay *r = run("leak.txt", NULL, 0);
    const rp_finding *w;
    uint64_t total;
    uint32_t n = rp_replay_warnings(r, &w, &total);
    CHECK(!rp_replay_result(r)->violated);
    CHECK(total == 3 && n == 3);
    CHECK(n == 3 && !strcmp(w[0].invariant, "alloc_failed") && w[0].at.seq == 6);
    CHECK(n == 3 && !strcmp(w[1].invariant, "live_at_end") && w[1].at.seq == 3);  /* the pool block */
    CHECK(n == 3 && !strcmp(w[2].invariant, "live_at_end") && w[2].at.seq == 5);  /* not the pool's segment */
    CHECK(rp_replay_result(r)->peak_reserved == 1024 && rp_replay_result(r)->peak_allocated == 1024);
    rp_replay_free(r);
    /* Pinned host memory obtained inside an operation is the pool's segment. */
    r = run("pinned_segment.txt", NULL, 0);
    CHECK(!rp_replay_result(r)->violated && rp_replay_result(r)->peak_reserved == 65536);
    rp_replay_free(r);
    /* So is an address range reserved inside an operation (VMM growth). */
    r = run("va_segment.txt", NULL, 0);
    CHECK(!rp_replay_result(r)->violated && rp_replay_result(r)->peak_reserved == 65536);
    rp_replay_free(r);
    r = run("va_told.txt", NULL, 0);
    CHECK(!rp_replay_result(r)->violated && rp_replay_result(r)->peak_reserved == 4 << 20 &&
          rp_replay_result(r)->seg_sizes[21] == 2);
    rp_replay_free(r);
    /* A segment told twice (nested cudaMalloc and pool_segment grow) was obtained once. */
    r = run("segment_twice.txt", NULL, 0);
    CHECK(!rp_replay_result(r)->violated && rp_replay_result(r)->seg_sizes[20] == 2);
    rp_replay_free(r);
    /* Segments told with pool_segment grow are the pools' cached segments. */
    r = run("segment_told.txt", NULL, 0);
    n = rp_replay_warnings(r, &w, &total);
    CHECK(!rp_replay_result(r)->violated);
    CHECK(total == 0 && n == 0);
    rp_replay_free(r);
    /* A release the real call refused is taken back. */
    r = run("release_failed.txt", NULL, 0);
    n = rp_replay_warnings(r, &w, &total);
    CHECK(!rp_replay_result(r)->violated);
    CHECK(n == 2 && !strcmp(w[0].invariant, "live_at_end") && !strcmp(w[1].invariant, "live_at_end"));
    CHECK(n == 2 && w[0].at.seq + w[1].at.seq == 4 + 6);
    rp_replay_free(r);
    /* However late its failure comes: another thread's 600 releases in
     * between (a window of the last 256 lost it: a false double_free). */
    r = run("release_failed_late.txt", NULL, 0);
    n = rp_replay_warnings(r, &w, &total);
    CHECK(!rp_replay_result(r)->violated);
    CHECK(n == 0);
    rp_replay_free(r);
    /* A device reset's memory: no overlap where its addresses come back,
     * no leak, the program's free of a block it took no double free
     * (old: overlap at seq 6); a real double free or overlap after it is
     * still found, on the device reset and on another. */
    r = run("teardown.txt", NULL, 0);
    n = rp_replay_warnings(r, &w, &total);
    CHECK(!rp_replay_result(r)->violated);
    if (rp_replay_result(r)->violated)
        fprintf(stderr, "  teardown.txt: %s\n", rp_replay_result(r)->violation.message);
    CHECK(n == 0);
    rp_replay_free(r);
    expect("teardown_double_free.txt", NULL, "double_free", 4);
    expect("teardown_other_device.txt", NULL, "double_free", 4);
    expect("teardown_overlap.txt", NULL, "overlap", 3);
    r = run("teardown_pool.txt", NULL, 0);   /* a pool's blocks go with its segment */
    n = rp_replay_warnings(r, &w, &total);
    CHECK(!rp_replay_result(r)->violated && total == 0);
    rp_replay_free(r);
}

static void explore(void)
{
    evtext t;
    load("cupy5_clean.txt", &t);
    expect("cupy5_clean.txt", &rp_model_cupy5, NULL, 0);  /* the run itself was fine */
    rp_source src;
    rp_source_array(&src, t.ev, t.n, 1);
    rp_options o = opts(&rp_model_cupy5);
    rp_explore_result x;
    rp_replay *r = rp_explore(&o, &src, &x);
    CHECK(r && !rp_replay_result(r)->violated);
    CHECK(x.found && !strcmp(x.finding.invariant, "sorted_index"));
    CHECK(x.op.seq == 9 && x.gc_seq == 16 && x.nfrees == 1 && x.frees[0] == 0x200000);
    CHECK(x.point && strstr(x.point, "set()"));
    rp_replay_free(r);
    /* cupy: no re-entrancy point, nothing to find. */
    o = opts(&rp_model_cupy);
    rp_source_array(&src, t.ev, t.n, 1);
    r = rp_explore(&o, &src, &x);
    CHECK(r && !x.found);
    rp_replay_free(r);
    evtext_free(&t);
}

static void minimize(void)
{
    evtext t;
    load("cupy5_noisy.txt", &t);
    rp_options o = opts(&rp_model_cupy5);
    named_log = &t;
    unsigned char keep[128] = {0};
    CHECK(t.n < 128);
    rp_minimize_events(&o, t.ev, t.n, "sorted_index", keep);
    /* Kept: the two allocations, the outer free and, of the collection's
     * three frees, the one that matters.  The rest is noise. */
    size_t kept = 0;
    for (size_t i = 0; i < t.n; i++)
        kept += keep[i];
    named_log = NULL;
    CHECK(kept == 16);
    if (kept != 16)
        for (size_t i = 0; i < t.n; i++)
            if (keep[i])
                fprintf(stderr, "  kept seq %llu kind %u\n", (unsigned long long)t.ev[i].seq, t.ev[i].kind);
    evtext_free(&t);
}

/* An unmodelled pool's operation with a nested operation inside it. */
static void unmodelled_nesting(void)
{
    evtext t;
    load("unmodelled_nesting.txt", &t);
    rp_options o = opts(&rp_model_cupy);
    o.pool = "1";
    o.paranoid = 1;
    rp_replay *r = rp_replay_new(&o);
    for (size_t i = 0; i < t.n; i++)
        if (rp_replay_event(r, &t.ev[i]))
            break;
    rp_replay_finish(r, t.has_end);
    const rp_result *res = rp_replay_result(r);
    CHECK(!res->violated);
    rp_replay_free(r);
    evtext_free(&t);
}

/* A model for the step audit: its allocation breaks "first"; a full audit
 * after that finds "second" too, and warns "third" (a warning it says once:
 * said again in the audit). */
static int step_audits;

static void *step_create(void) { return calloc(1, 1); }
static void step_destroy(void *m) { free(m); }
static void step_copy(void *d, const void *s) { (void)d, (void)s; }
static int step_alloc(void *m, uint64_t size, uint64_t stream, const rp_host *h, uint64_t *ptr, uint64_t *granted)
{
    (void)m, (void)size, (void)stream, (void)ptr, (void)granted;
    return rp_violate(h, "first", "the operation broke it");
}
static int step_free(void *m, uint64_t ptr, int nested, const rp_host *h) { (void)m, (void)ptr, (void)nested, (void)h; return RP_OK; }
static int step_release(void *m, uint64_t base, uint64_t size, const rp_host *h)
{
    (void)m, (void)base, (void)size, (void)h;
    return RP_OK;
}
static int step_check(void *m, int full, const rp_host *h)
{
    unsigned char *said = m;
    if (!full || !h->audit_all)
        return RP_OK;
    step_audits++;
    /* rp_violate lets an audit_all audit go on: all three are reported. */
    int rc = rp_violate(h, "first", "seen again");
    rc |= rp_violate(h, "second", "another face of it");
    if (!*said || h->audit_all) {
        *said |= !h->audit_all;
        rp_warn(h, "third", "fragmentation");
    }
    return rc;
}
static void step_stats(const void *m, rp_model_stats *st, int detail) { (void)m, (void)detail; memset(st, 0, sizeof *st); }
static const rp_model_ops step_model = {
    .name = "step", .summary = "test", .create = step_create, .destroy = step_destroy, .copy = step_copy,
    .alloc = step_alloc, .free = step_free, .release = step_release, .check = step_check, .stats = step_stats,
};

static void every_invariant_of_the_step(void)
{
    evtext t;
    char err[256];
    CHECK(evtext_parse("pool 1 step\nop alloc 1 512\nalloc 1 0x100000 512\nend\nendlog\n", &t, err, sizeof err) == 0);
    rp_options o = opts(&step_model);
    rp_replay *r = rp_replay_new(&o);
    for (size_t i = 0; i < t.n; i++)
        if (rp_replay_event(r, &t.ev[i]))
            break;
    rp_replay_finish(r, t.has_end);
    const rp_result *res = rp_replay_result(r);
    CHECK(res->violated && !strcmp(res->violation.invariant, "first") && step_audits == 1);
    CHECK(res->nbroken == 3);
    if (res->nbroken == 3) {
        CHECK(!strcmp(res->broken[0].invariant, "first") && !strcmp(res->broken[0].message, "the operation broke it"));
        CHECK(!strcmp(res->broken[1].invariant, "second") && !res->broken[1].warning);
        CHECK(!strcmp(res->broken[2].invariant, "third") && res->broken[2].warning);
    }
    rp_replay_free(r);
    evtext_free(&t);
    /* A model-free violation lists itself. */
    rp_replay *d = run("double_free.txt", NULL, 0);
    res = rp_replay_result(d);
    CHECK(res->nbroken == 1 && !strcmp(res->broken[0].invariant, "double_free"));
    rp_replay_free(d);
}

int main(int argc, char **argv)
{
    dir = argc > 1 ? argv[1] : ".";
    story();
    reentry_point();
    fidelity();
    model_free();
    unmodelled_nesting();
    explore();
    minimize();
    every_invariant_of_the_step();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures != 0;
}
