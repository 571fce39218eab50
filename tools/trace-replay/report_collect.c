/*
 * report_collect.c - the one pass over a log behind `report`.
 *
 * Violations and warnings come from the model-free checks (checks.c), fed
 * exactly as the replay driver feeds them.  Beside them this pass keeps what
 * the checks have no use for: who allocated each live block (so a free can be
 * charged to its allocation site), whether a free ran inside a collection,
 * and the memory figures over time.
 */
#include <ctype.h>
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "model_inputs.h"
#include "progress.h"
#include "ptrmap.h"
#include "report_canon.h"
#include "xalloc.h"

/* Live blocks of one kind of memory: address -> the block's record.  One
 * map, to records in one array (freed ones reused): with TRACE_PY_ALLOCS a
 * log holds millions of object addresses whose frees outside collections
 * are not recorded, and three maps of the same keys, doubling together,
 * took 946 MB of a 222-million-event log's report. */
typedef struct live_block {
    uint64_t size, born;       /* born: the allocation's seq */
    uint32_t site;
    uint32_t next_free;        /* in the free list: the next record + 1 */
} live_block;

typedef struct live {
    rp_ptrmap at;              /* address -> record */
    live_block *blocks;
    size_t nblocks, capblocks;
    uint32_t free_list;        /* a freed record + 1, 0 none */
    uint64_t bytes;
} live;

/* A host block just released, for the map_rest pieces that may follow
 * (what is left of a mapping a call cut: FORMAT.md section 7). */
typedef struct recent_cut {
    uint64_t ptr, size, born;
    uint32_t site;
    uint64_t charged;          /* bytes of it charged as freed by a collection */
} recent_cut;
#define RUN_MAX 2048u          /* a call releases 1024 tracked mappings at most (MAP_SLOTS) */

/* The host blocks one thread released since its last host allocation: a
 * call's releases, which its pieces follow on the same thread.  One per
 * thread, as other threads' releases come between (recorded while the cut
 * ran): a ring shared by all threads lost the cut under 32 large frees of
 * other threads.  Nor a fixed number: an munmap over 40 mappings released
 * the first, cut, before 39 others, and a ring of 32 lost it.  Either way
 * its pieces were counted as new allocations at the cutting call.  A ring
 * of up to RUN_MAX. */
typedef struct cut_run {
    recent_cut *cuts;
    uint32_t n, cap;           /* n: put in since the run began */
    int closed;                /* a host allocation came: the next release begins a run */
} cut_run;

typedef struct pass {
    rpt *r;
    rp_checks *checks;
    rp_replay *replay;         /* the pool models (check's driver), on the same walker */
    rp_model_inputs inputs;    /* what they ask besides the events, as check answers it */
    rp_ptrmap thread_index;    /* tid -> position in r->threads */
    const char *progress;      /* the progress line's words */
    live direct_dev;           /* device allocations outside any pool */
    /* VMM physical memory (cuMemCreate): device memory the program holds
     * from its creation to its release, with no address of its own, so the
     * checks' device space never sees it.  Outside pool operations and
     * inside them (a pool's expandable segments), as direct_dev and the
     * pools' segments are told apart. */
    live vmm_direct, vmm_pooled;
    live pool_blocks;
    live host;
    cut_run *runs;             /* per thread, at its position in r->threads */
    size_t nruns, capruns;
    live py_objects;           /* each address's last py_alloc (kept past frees: object_freed) */
    rp_ptrmap site_index;      /* key hash -> site index */
    rp_ptrmap dinit_index;     /* key hash -> double-init group */
    rp_ptrmap native_site;     /* native stack id -> index of its site frame */
    rp_ptrmap site_by_stacks;  /* py stack id << 32 | native stack id -> site (events but CUDA's) */
    rp_ptrmap pool_site_by_stacks;   /* the same for pool events (SITE_POOL) */
    rp_ptrmap library_code;    /* py code id -> 2 library, 1 the program's */
    rpt_canon canon;           /* ids of code, strings and stacks by content */
    rp_ptrmap stack_index;     /* (py stack, native stack) -> dev_stacks index */
    rp_ptrmap host_stack_index;  /* the same -> host_stacks index */
    rp_ptrmap stack_by_content;  /* the same by content (rpt_canon) -> dev_stacks index */
    rp_ptrmap host_stack_by_content;   /* -> host_stacks index */
    rp_ptrmap stacks_seen;     /* native stack ids whose modules are noted */
    rp_ptrmap modules_seen;    /* module ids on some native stack */
    size_t cappools;
    rp_ptrmap pool_index;      /* pool id -> position in r->pools */
    size_t caphoststacks;
    size_t capsites, capstacks, capdinits, capmodules, capcoll, capthreads;
} pass;

static void live_init(live *l)
{
    memset(l, 0, sizeof *l);
    rp_ptrmap_init(&l->at);
}

static void live_free(live *l)
{
    rp_ptrmap_free(&l->at);
    free(l->blocks);
}

static void live_add(live *l, uint64_t ptr, uint64_t size, uint32_t site, uint64_t seq)
{
    uint64_t *at = rp_ptrmap_get(&l->at, ptr);
    live_block *b;
    if (at) {
        b = &l->blocks[*at];
        l->bytes -= b->size;   /* allocated again without a free we saw */
    } else {
        uint64_t i;
        if (l->free_list) {
            i = l->free_list - 1u;
            l->free_list = l->blocks[i].next_free;
        } else {
            rp_grow(&l->blocks, &l->capblocks, l->nblocks + 1, sizeof *l->blocks);
            i = l->nblocks++;
        }
        rp_ptrmap_put(&l->at, ptr, i);
        b = &l->blocks[i];
    }
    *b = (live_block){ .size = size, .born = seq, .site = site };
    l->bytes += size;
}

/* 1 with the block's site, size and allocation seq when ptr was live. */
/* The block at ptr, kept. */
static int live_get(const live *l, uint64_t ptr, uint32_t *site, uint64_t *size, uint64_t *born)
{
    uint64_t *at = rp_ptrmap_get(&l->at, ptr);
    if (!at)
        return 0;
    const live_block *b = &l->blocks[*at];
    *site = b->site;
    *size = b->size;
    *born = b->born;
    return 1;
}

static int live_del(live *l, uint64_t ptr, uint32_t *site, uint64_t *size, uint64_t *born)
{
    uint64_t i;
    if (!rp_ptrmap_del(&l->at, ptr, &i))
        return 0;
    live_block *b = &l->blocks[i];
    *site = b->site;
    *size = b->size;
    *born = b->born;
    l->bytes -= b->size;
    b->next_free = l->free_list;
    l->free_list = (uint32_t)i + 1u;
    return 1;
}

/* ----------------------------------------------------------------- sites */

static const char *module_base(const tf_module *m);

static int is_tracer(const tf_module *m)
{
    const char *base = module_base(m);
    return base && !strncmp(base, "libtrace.so", 11);
}

/* CUDA's static runtime (nvcc links it by default) is the program's own
 * code: its internal functions are named libcudart_static_<hash>, its entry
 * points cudaMalloc and so on, and the hooks see the driver calls it makes
 * beneath them.  The frame that says where is the one that called the entry
 * point.  Known by symbol only, so a stripped program keeps the runtime's
 * frame. */
static uint32_t past_static_runtime(rpt *r, uint32_t stack, uint32_t i)
{
    const rn_native_frame *f[RPT_MAX_FRAMES];
    uint32_t n = rn_stacks_native(r->stacks, stack, f, RPT_MAX_FRAMES), j = i;
    while (j < n && f[j]->function && !strncmp(f[j]->function, "libcudart_static_", 17))
        j++;
    if (j == i)
        return i;
    if (j < n && f[j]->function && !strncmp(f[j]->function, "cuda", 4) && isupper((unsigned char)f[j]->function[4]))
        j++;
    return j < n ? j : i;
}

static const char *module_base(const tf_module *m)
{
    const char *base = m && m->path ? strrchr(m->path, '/') : NULL;
    return base ? base + 1 : m ? m->path : NULL;
}

/* CPython's code: libpython, or a static interpreter's executable. */
static int is_interpreter(const rpt *r, const tf_module *m)
{
    const char *base = module_base(m);
    if (!base)
        return 0;
    if (!strncmp(base, "libpython", 9))
        return 1;
    const tf_header *h = tf_reader_header(r->reader);
    const char *exe = h && h->exe ? strrchr(h->exe, '/') : NULL;
    return exe && !strcmp(m->path, h->exe) && !strncmp(exe + 1, "python", 6);
}

/* The loader and libc: where a stack of interpreter frames ends when no
 * extension module called the interpreter. */
static int is_runtime(const tf_module *m)
{
    const char *base = module_base(m);
    return base && (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) || !strncmp(base, "ld-linux", 8) ||
                    !strncmp(base, "ld.so", 5) || !strncmp(base, "ld64.so", 7));
}

enum { SITE_PLAIN, SITE_CUDA, SITE_POOL };

/* The innermost frame outside the tracer itself (its hooks are on every
 * stack and tell nothing about the program), for CUDA calls outside a
 * static CUDA runtime, and for pool events outside the interpreter frames
 * that called a hook made a Python callable (CuPy's MemoryHook: every
 * CuPy site said `cfunction_call`, the frame that called our hook, where
 * the Cython pool code that called the interpreter says which pool
 * operation it was).  1 with its index, address and module's path. */
static int native_site_of(rpt *r, pass *ps, uint32_t stack, int mode, uint32_t *index, uint64_t *ip,
                          const char **module)
{
    const uint64_t *ips;
    uint32_t n;
    if (!tf_reader_native_stack(r->reader, stack, &ips, &n))
        return 0;
    uint64_t key = stack | (uint64_t)mode << 32;
    uint64_t *cached = rp_ptrmap_get(&ps->native_site, key);
    if (!cached) {
        uint32_t i = 0;
        while (i < n && is_tracer(tf_reader_stack_module(r->reader, stack, ips[i])))
            i++;
        if (mode == SITE_CUDA && i < n)
            i = past_static_runtime(r, stack, i);
        if (mode == SITE_POOL) {
            /* Only when a module of the program's called the interpreter:
             * a pool written in Python keeps the interpreter's frame. */
            uint32_t j = i;
            while (j < n && is_interpreter(r, tf_reader_stack_module(r->reader, stack, ips[j])))
                j++;
            const tf_module *m = j < n ? tf_reader_stack_module(r->reader, stack, ips[j]) : NULL;
            if (j > i && m && !is_tracer(m) && !is_runtime(m))
                i = j;
        }
        rp_ptrmap_put(&ps->native_site, key, i);
        cached = rp_ptrmap_get(&ps->native_site, key);
    }
    if (*cached >= n)
        return 0;
    *index = (uint32_t)*cached;
    *ip = ips[*index];
    const tf_module *m = tf_reader_stack_module(r->reader, stack, *ip);
    *module = m ? m->path : NULL;
    return 1;
}

typedef struct site_key {
    const rpt *r;
    uint32_t code, line, caller_code, caller_line, via_library;
    uint64_t ip;
    const char *module;   /* the path of the module holding ip when recorded */
} site_key;

/* Two libraries loaded in turn at one address are two sites; the same
 * library loaded again is one. */
static int same_module(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static int same_site(const void *ctx, uint64_t idx)
{
    const site_key *k = ctx;
    const rpt_site *s = &k->r->sites[idx];
    return s->py_code == k->code && s->py_line == k->line && s->caller_code == k->caller_code &&
           s->caller_line == k->caller_line && s->via_library == k->via_library && s->native_ip == k->ip &&
           same_module(s->native_module, k->module);
}

/* Is this code object's file the standard library's or an installed
 * package's?  Remembered per code id. */
static int library_code(rpt *r, pass *ps, uint32_t code)
{
    uint64_t *known = rp_ptrmap_get(&ps->library_code, code);
    if (known)
        return *known == 2;
    const tf_py_code *c = tf_reader_py_code(r->reader, code);
    const char *file = c ? tf_reader_string(r->reader, c->file, NULL) : NULL;
    /* The frame ending a stack cut short is nobody's line: passed over as
     * a library's is. */
    int library = (file && rpt_py_file_is_library(file)) || tf_reader_py_code_is_cut(r->reader, code);
    rp_ptrmap_put(&ps->library_code, code, library ? 2 : 1);
    return library;
}

static uint32_t site_of_stacks(rpt *r, pass *ps, const tf_event *e, int mode);

static uint32_t site_of(rpt *r, pass *ps, const tf_event *e)
{
    /* Most events repeat a pair of stacks met before (222 million events of
     * a NumPy suite, 550 thousand pairs): its site is looked up once. */
    int mode = e->kind == TF_EV_CUDA_ALLOC || e->kind == TF_EV_CUDA_FREE ? SITE_CUDA
               : e->kind == TF_EV_POOL_ALLOC || e->kind == TF_EV_POOL_FREE ? SITE_POOL : SITE_PLAIN;
    rp_ptrmap *map = mode == SITE_POOL ? &ps->pool_site_by_stacks : &ps->site_by_stacks;
    uint64_t pair = (uint64_t)e->py_stack << 32 | e->native_stack;
    uint64_t *known = mode == SITE_CUDA ? NULL : rp_ptrmap_get(map, pair);
    if (known)
        return (uint32_t)*known;
    uint32_t site = site_of_stacks(r, ps, e, mode);
    if (mode != SITE_CUDA)
        rp_ptrmap_put(map, pair, site);
    return site;
}

static uint32_t site_of_stacks(rpt *r, pass *ps, const tf_event *e, int mode)
{
    site_key k = {.r = r};
    tf_py_walk w;
    uint32_t n;
    /* The innermost frames only, walked (the stack is not made an array):
     * up to the first of the program's own. */
    if (e->py_stack && tf_reader_py_walk(r->reader, e->py_stack, &w, &n) && n) {
        tf_py_frame f0 = {0, 0}, f1 = {0, 0}, cur = {0, 0}, prev = {0, 0};
        uint32_t u = 0, seen = 0;
        while (seen < n && tf_py_walk_next(&w, &cur)) {
            if (seen == 0)
                f0 = cur;
            else if (seen == 1)
                f1 = cur;
            seen++;
            if (!library_code(r, ps, cur.code))
                break;
            prev = cur;
            u++;
        }
        if (u > 0 && u < seen) {  /* the program's line, and the library function it called */
            k.code = rpt_canon_code(&ps->canon, cur.code);
            k.line = cur.line;
            k.caller_code = rpt_canon_code(&ps->canon, prev.code);
            k.caller_line = prev.line;
            k.via_library = 1;
        } else if (seen) {        /* the program's own frame, or library frames only */
            k.code = rpt_canon_code(&ps->canon, f0.code);
            k.line = f0.line;
            if (n > 1 && (seen > 1 || tf_py_walk_next(&w, &f1))) {
                k.caller_code = rpt_canon_code(&ps->canon, f1.code);
                k.caller_line = f1.line;
            }
        }
    }
    uint32_t index = 0;
    if (e->native_stack && !native_site_of(r, ps, e->native_stack, mode, &index, &k.ip, &k.module)) {
        k.ip = 0;
        k.module = NULL;
    }
    uint64_t key;
    uint64_t h = rpt_mix(rpt_mix(rpt_mix(rpt_mix(rpt_mix(rpt_mix(1, k.code), k.line), k.caller_code), k.caller_line),
                                 k.via_library), k.ip);
    uint64_t *idx = rpt_index_slot(&ps->site_index, h, same_site, &k, &key);
    if (idx)
        return (uint32_t)*idx;
    rp_grow(&r->sites, &ps->capsites, r->nsites + 1, sizeof *r->sites);
    rpt_site *s = &r->sites[r->nsites];
    memset(s, 0, sizeof *s);
    s->py_code = k.code;
    s->py_line = k.line;
    s->caller_code = k.caller_code;
    s->caller_line = k.caller_line;
    s->via_library = k.via_library;
    s->native_ip = k.ip;
    s->native_module = k.module;
    s->native_stack = e->native_stack;
    s->native_index = index;
    s->py_stack = e->py_stack;
    rp_ptrmap_put(&ps->site_index, key, r->nsites);
    return r->nsites++;
}

/* ---------------------------------------------------------------- threads */

static void count_thread(rpt *r, pass *ps, uint32_t tid)
{
    uint64_t *at = rp_ptrmap_get(&ps->thread_index, tid);
    if (at) {
        r->threads[*at].events++;
        return;
    }
    rp_grow(&r->threads, &ps->capthreads, r->nthreads + 1, sizeof *r->threads);
    rp_ptrmap_put(&ps->thread_index, tid, r->nthreads);
    r->threads[r->nthreads++] = (rpt_thread){tid, 1};
}

/* ------------------------------------------------------------ accounting */

/* Found through a map: a log can name any number of pools. */
static rpt_pool *pool_of(rpt *r, pass *ps, uint32_t id)
{
    uint64_t *at = rp_ptrmap_get(&ps->pool_index, id);
    if (at)
        return &r->pools[*at];
    rp_grow(&r->pools, &ps->cappools, r->npools + 1, sizeof *r->pools);
    rp_ptrmap_put(&ps->pool_index, id, r->npools);
    rpt_pool *p = &r->pools[r->npools++];
    memset(p, 0, sizeof *p);
    p->id = id;
    return p;
}

/* An operation of pool p starting inside a collection that interrupted an
 * operation of the same pool: the pool is re-entered. */
static void note_reentry(rpt_pool *p, const tf_event *e, const rp_frame *up)
{
    if (!up || up->gc_over_pool != p->id)
        return;
    if (!p->reentries++) {
        p->first_reentry = (rp_site){e->seq, e->tid, e->native_stack, e->py_stack};
        p->reentered_op = up->gc_over_seq;
    }
}

static void pool_event(rpt *r, pass *ps, const tf_event *e, const rp_frame *up)
{
    uint32_t id = e->kind == TF_EV_POOL_OP_BEGIN ? e->u.pool_op.pool
                  : e->kind == TF_EV_POOL_SEGMENT ? e->u.segment.pool
                                                  : e->u.pool.pool;
    rpt_pool *p = pool_of(r, ps, id);
    int bare = !up || up->kind != TF_EV_POOL_OP_BEGIN;   /* not inside one of its operations */
    switch (e->kind) {
    case TF_EV_POOL_OP_BEGIN: p->ops++; note_reentry(p, e, up); break;
    case TF_EV_POOL_ALLOC: p->allocs++; break;
    case TF_EV_POOL_FREE: p->frees++; break;
    default: break;   /* segments: counted as the checks count them (collect_event) */
    }
    if (bare && (e->kind == TF_EV_POOL_ALLOC || e->kind == TF_EV_POOL_FREE))
        note_reentry(p, e, up);
}

static void charge_gc_free(rpt *r, uint32_t site, uint64_t size, int device)
{
    rpt_site *s = &r->sites[site];
    if (device) {
        s->gc_dev_bytes += size;
        s->gc_dev_count++;
        r->gc_dev_bytes += size;
    } else {
        s->gc_host_bytes += size;
        s->gc_host_count++;
        r->gc_host_bytes += size;
    }
}

/* Allocations by whole stack, for the flame graph: device memory, and large
 * host buffers (what a Python program without a GPU has to show). */
static void tally_stack(rpt *r, pass *ps, const tf_event *e, uint64_t size, int device)
{
    rpt_stack_tally **tally = device ? &r->dev_stacks : &r->host_stacks;
    uint32_t *n = device ? &r->ndev_stacks : &r->nhost_stacks;
    uint64_t pair = (uint64_t)e->py_stack << 32 | e->native_stack;
    rp_ptrmap *index = device ? &ps->stack_index : &ps->host_stack_index;
    uint64_t *idx = rp_ptrmap_get(index, pair);
    if (!idx) {
        /* A pair met first: its stacks by content (a stack defined again
         * under a new id, in a segment of a budgeted log or after the
         * recorder forgot its tables, is the same stack), looked up once. */
        rp_ptrmap *by_content = device ? &ps->stack_by_content : &ps->host_stack_by_content;
        uint64_t canon = (uint64_t)rpt_canon_py_stack(&ps->canon, e->py_stack) << 32 |
                         rpt_canon_native_stack(&ps->canon, e->native_stack);
        uint64_t *known = rp_ptrmap_get(by_content, canon);
        uint64_t at = known ? *known : *n;
        if (!known) {
            rp_grow(tally, device ? &ps->capstacks : &ps->caphoststacks, *n + 1, sizeof **tally);
            (*tally)[(*n)++] = (rpt_stack_tally){e->py_stack, e->native_stack, 0, 0};
            rp_ptrmap_put(by_content, canon, at);
        }
        rp_ptrmap_put(index, pair, at);
        idx = rp_ptrmap_get(index, pair);
    }
    (*tally)[*idx].bytes += size;
    (*tally)[*idx].count++;
}

static void alloc_event(rpt *r, pass *ps, const tf_event *e, live *l, uint64_t ptr, uint64_t size, int device)
{
    uint32_t site = site_of(r, ps, e);
    rpt_site *s = &r->sites[site];
    if (device) {
        s->dev_bytes += size;
        s->dev_count++;
    } else {
        s->host_bytes += size;
        s->host_count++;
    }
    tally_stack(r, ps, e, size, device);
    live_add(l, ptr, size, site, e->seq);
}

/* A free inside a collection is the collection's only for a block older
 * than it: one a finalizer allocated and dropped while the collection ran
 * (a temporary in __del__) was never garbage the collector found.
 * gc_seq: the seq of the innermost collection the free is in, 0 none. */
static int freed_by_collection(uint64_t born, uint64_t gc_seq)
{
    return gc_seq && born < gc_seq;
}

static void free_event(rpt *r, live *l, uint64_t ptr, uint64_t gc_seq, int device)
{
    uint32_t site;
    uint64_t size, born;
    if (live_del(l, ptr, &site, &size, &born) && freed_by_collection(born, gc_seq))
        charge_gc_free(r, site, size, device);
}

/* The run of the event's thread (count_thread has seen it). */
static cut_run *run_of(rpt *r, pass *ps, uint32_t tid)
{
    uint64_t *at = rp_ptrmap_get(&ps->thread_index, tid);
    uint64_t i = at ? *at : r->nthreads;
    if (i >= ps->nruns) {
        rp_grow(&ps->runs, &ps->capruns, i + 1, sizeof *ps->runs);
        memset(ps->runs + ps->nruns, 0, (i + 1 - ps->nruns) * sizeof *ps->runs);
        ps->nruns = i + 1;
    }
    return &ps->runs[i];
}

/* A host block's release; the block is remembered a while for the map_rest
 * pieces that may follow it. */
static void host_freed(rpt *r, pass *ps, const tf_event *e, uint64_t gc_seq)
{
    uint32_t site;
    uint64_t size, born;
    if (!live_del(&ps->host, e->u.host.ptr, &site, &size, &born))
        return;
    int by_collection = freed_by_collection(born, gc_seq);
    if (by_collection)
        charge_gc_free(r, site, size, 0);
    cut_run *run = run_of(r, ps, e->tid);
    if (run->closed)
        run->n = run->closed = 0;
    if (run->n == run->cap && run->cap < RUN_MAX) {   /* not wrapped yet: grows in place */
        run->cap = run->cap ? 2 * run->cap : 16;
        run->cuts = rp_xrealloc(run->cuts, run->cap * sizeof *run->cuts);
    }
    run->cuts[run->n++ % run->cap] = (recent_cut){
        .ptr = e->u.host.ptr, .size = size, .born = born, .site = site, .charged = by_collection ? size : 0 };
}

/* A map_rest piece: what is left of the mapping this thread released just
 * before it, which holds its start (the newest such: an address range freed
 * earlier may have held it too).  It keeps that mapping's site and age and
 * is no new allocation: counted at the cutting call, an munmap of 8 MiB in a
 * 64 MiB mapping was 56 MiB more allocated at the munmap's line.  A piece
 * whose mapping the log does not have (written by a 2.5 recorder: it has no
 * map_rest; or cut out of the log) is counted where it was made. */
static void host_rest(rpt *r, pass *ps, const tf_event *e)
{
    uint64_t p = e->u.host.ptr;
    cut_run *run = run_of(r, ps, e->tid);
    for (uint32_t k = 0; k < run->cap && k < run->n; k++) {
        recent_cut *c = &run->cuts[(run->n - 1 - k) % run->cap];
        if (p >= c->ptr && p - c->ptr < c->size) {
            live_add(&ps->host, p, e->u.host.size, c->site, c->born);
            /* A collection that cut a mapping freed only the cut; one
             * whose call failed (the mapping put back whole) freed no
             * block (it stayed one block freed, of 0 bytes). */
            uint64_t back = e->u.host.size < c->charged ? e->u.host.size : c->charged;
            rpt_site *s = &r->sites[c->site];
            if (back && s->gc_host_bytes >= back) {
                s->gc_host_bytes -= back;
                r->gc_host_bytes -= back;
                c->charged -= back;
                if (!c->charged && s->gc_host_count)
                    s->gc_host_count--;
            }
            return;
        }
    }
    alloc_event(r, ps, e, &ps->host, p, e->u.host.size, 0);
}

/* An object allocation (py_alloc): its site, for when a collection frees
 * it.  A block freed outside collections is not in the log; the next
 * allocation at its address replaces it here (every allocation is there
 * when frees are). */
static void object_allocated(rpt *r, pass *ps, const tf_event *e)
{
    uint32_t site = site_of(r, ps, e);
    /* A resize (api realloc) moves an object, it makes none: counted, a
     * tuple built from a generator was 4 to 12 objects. */
    if (e->u.host.api != TF_HOST_API_REALLOC) {
        r->sites[site].obj_bytes += e->u.host.size;
        r->sites[site].obj_count++;
    }
    live_add(&ps->py_objects, e->u.host.ptr, e->u.host.size, site, e->seq);
}

/* A collection's free, charged to the allocation last recorded at its
 * address.  Which stays: a free list (of lists, tuples, dicts, a Cython
 * type's) hands the block out again with no py_alloc, and when a
 * collection frees that object too, the last allocation recorded there is
 * all we know of it (docs/python.md).  Forgotten, 953 of 1,000 lists
 * collected 50 at a time by gc.collect(0) were "allocated before the log's
 * allocations". */
static void object_freed(rpt *r, pass *ps, const tf_event *e, uint64_t gc_seq)
{
    uint32_t site;
    uint64_t size, born;
    if (!gc_seq)
        return;
    if (!live_get(&ps->py_objects, e->u.host.ptr, &site, &size, &born)) {
        r->gc_obj_unknown++;
        return;
    }
    if (!freed_by_collection(born, gc_seq))
        return;
    r->sites[site].gc_obj_count++;
    r->sites[site].gc_obj_bytes += size;
    r->gc_obj_count++;
    r->gc_obj_bytes += size;
}

static void collection(rpt *r, pass *ps, const tf_event *e)
{
    if (e->kind == TF_EV_GC_START) {
        rp_grow(&r->collections, &ps->capcoll, r->ncollections + 1, sizeof *r->collections);
        r->collections[r->ncollections++] = (rpt_collection){
            .t_start = e->t_ns, .generation = e->u.gc.generation, .tid = e->tid, .seq = e->seq };
        return;
    }
    /* The stop closes the latest open collection of its thread. */
    for (uint32_t i = r->ncollections; i-- > 0;) {
        rpt_collection *c = &r->collections[i];
        if (c->tid != e->tid || c->t_stop)
            continue;
        c->t_stop = e->t_ns;
        int g = c->generation >= 0 && c->generation < 3 ? c->generation : 2;
        uint64_t pause = e->u.gc.duration_ns ? e->u.gc.duration_ns : e->t_ns - c->t_start;
        r->gc[g].collections++;
        r->gc[g].collected += e->u.gc.collected;
        r->gc[g].uncollectable += e->u.gc.uncollectable;
        r->gc[g].pause_ns += pause;
        if (pause > r->gc[g].max_pause_ns)
            r->gc[g].max_pause_ns = pause;
        return;
    }
}

/* A place of double initialisations: the type by its text, the Python
 * stack by its frames, the native stack as a place (rpt_canon_place).  By
 * id, a line met in every segment of a budgeted log was a place per
 * segment ("from 6 places" for one), and on 3.13 its first object a place
 * of its own. */
typedef struct dinit_key { const rpt *r; rpt_canon *canon; uint32_t type_name, py, place; } dinit_key;

static int same_dinit(const void *ctx, uint64_t idx)
{
    const dinit_key *k = ctx;
    const rpt_double_init *d = &k->r->dinits[idx];
    return d->type_name == k->type_name && rpt_canon_py_stack(k->canon, d->py_stack) == k->py &&
           rpt_canon_place(k->canon, d->native_stack) == k->place;
}

static void double_init(rpt *r, pass *ps, const tf_event *e)
{
    dinit_key k = {r, &ps->canon, rpt_canon_string(&ps->canon, e->u.double_init.type_name),
                   rpt_canon_py_stack(&ps->canon, e->py_stack), rpt_canon_place(&ps->canon, e->native_stack)};
    uint64_t key, h = rpt_mix(rpt_mix(rpt_mix(2, k.type_name), k.py), k.place);
    uint64_t *idx = rpt_index_slot(&ps->dinit_index, h, same_dinit, &k, &key);
    if (idx) {
        r->dinits[*idx].count++;
        return;
    }
    rp_grow(&r->dinits, &ps->capdinits, r->ndinits + 1, sizeof *r->dinits);
    r->dinits[r->ndinits] = (rpt_double_init){k.type_name, e->native_stack, e->py_stack, 1, e->seq,
                                              e->u.double_init.obj};
    rp_ptrmap_put(&ps->dinit_index, key, r->ndinits++);
}

/* Memory now: reserved is what the device gave out (or, for logs without
 * CUDA calls such as imported snapshots, the pools' segments: both count the
 * same bytes when both are there); allocated is what the program holds. */
static void note_memory(rpt *r, pass *ps, const tf_event *e)
{
    uint64_t pool_reserved = 0, allocated = ps->direct_dev.bytes + ps->vmm_direct.bytes;
    for (uint32_t i = 0; i < r->npools; i++) {
        rp_pool_figures f = rp_checks_pool(ps->checks, r->pools[i].id);
        pool_reserved += f.reserved;
        allocated += f.allocated;
    }
    uint64_t device = rp_checks_device_live(ps->checks) + ps->vmm_direct.bytes + ps->vmm_pooled.bytes;
    uint64_t v[RPT_SERIES_MEASURES] = {device > pool_reserved ? device : pool_reserved, allocated,
                                       ps->host.bytes};
    rpt_peak *peaks[RPT_SERIES_MEASURES] = {&r->peak_reserved, &r->peak_allocated, &r->peak_host};
    for (int i = 0; i < RPT_SERIES_MEASURES; i++)
        if (v[i] > peaks[i]->bytes)
            *peaks[i] = (rpt_peak){v[i], e->seq, e->t_ns};
    rpt_series_add(&r->series, e->t_ns, v);
}

static int resize(uint32_t api)
{
    return api == TF_HOST_API_REALLOC || api == TF_HOST_API_REALLOCARRAY || api == TF_HOST_API_MREMAP;
}

/* The seq of the innermost collection open around the event, 0 none. */
static uint64_t innermost_collection(const rp_where *w)
{
    for (uint32_t i = w->depth; i-- > 0;)
        if (w->frames[i].kind == TF_EV_GC_START)
            return w->frames[i].seq;
    return 0;
}

static void account(rpt *r, pass *ps, const tf_event *e, const rp_where *w)
{
    const rp_frame *up = w->up;
    uint64_t gc_seq = up && up->in_gc ? innermost_collection(w) : 0;
    uint32_t owner = up && up->kind == TF_EV_POOL_OP_BEGIN ? up->pool : 0;
    switch (e->kind) {
    case TF_EV_CUDA_ALLOC:
        /* Inside a pool operation it is the pool's segment, not the program's. */
        if (tf_api_space(e->u.cuda.api) == TF_SPACE_DEVICE && !e->u.cuda.result && e->u.cuda.ptr && !owner)
            alloc_event(r, ps, e, &ps->direct_dev, e->u.cuda.ptr, e->u.cuda.size, 1);
        else if (tf_api_space(e->u.cuda.api) == TF_SPACE_HANDLE && !e->u.cuda.result && e->u.cuda.ptr &&
                 !rp_ptrmap_get(&ps->vmm_direct.at, e->u.cuda.ptr) && !rp_ptrmap_get(&ps->vmm_pooled.at, e->u.cuda.ptr))
            /* A retain of a live handle is one more reference to its bytes, counted already. */
            live_add(owner ? &ps->vmm_pooled : &ps->vmm_direct, e->u.cuda.ptr, e->u.cuda.size, 0, e->seq);
        break;
    case TF_EV_CUDA_FREE:
        if (tf_api_space(e->u.cuda.api) == TF_SPACE_DEVICE && !e->u.cuda.result && e->u.cuda.ptr) {
            free_event(r, &ps->direct_dev, e->u.cuda.ptr, gc_seq, 1);
        } else if (tf_api_space(e->u.cuda.api) == TF_SPACE_HANDLE && !e->u.cuda.result && e->u.cuda.ptr) {
            uint32_t site;
            uint64_t size, born;
            if (!live_del(&ps->vmm_direct, e->u.cuda.ptr, &site, &size, &born))
                live_del(&ps->vmm_pooled, e->u.cuda.ptr, &site, &size, &born);
        } else if (tf_api_space(e->u.cuda.api) == TF_SPACE_CONTEXT && !e->u.cuda.result) {
            /* A teardown: the device blocks it took (the checks, which saw
             * the event first, say which) are no longer held, nor freed by
             * whatever collection is running. */
            const uint64_t *gone;
            size_t n = rp_checks_gone(ps->checks, &gone);
            for (size_t i = 0; i < n; i++)
                free_event(r, &ps->direct_dev, gone[i], 0, 1);
        }
        break;
    case TF_EV_POOL_ALLOC:
        if (e->u.pool.ptr)
            alloc_event(r, ps, e, &ps->pool_blocks, e->u.pool.ptr,
                        e->u.pool.granted ? e->u.pool.granted : e->u.pool.requested, 1);
        break;
    case TF_EV_POOL_FREE:
        free_event(r, &ps->pool_blocks, e->u.pool.ptr, gc_seq, 1);
        break;
    case TF_EV_POOL_SEGMENT:
        /* A pool told a segment it obtained outside its operations: the
         * device allocation that starts there is the pool's (as the checks
         * take it), what the program holds is the pool's blocks in it. */
        if (e->u.segment.grow == TF_SEGMENT_GROW && e->u.segment.ptr) {
            uint32_t site;
            uint64_t size, born;
            live_del(&ps->direct_dev, e->u.segment.ptr, &site, &size, &born);
        }
        break;
    case TF_EV_HOST_ALLOC:
        if (e->u.host.ptr && e->u.host.api == TF_HOST_API_MAP_REST)
            host_rest(r, ps, e);
        else if (e->u.host.ptr)
            alloc_event(r, ps, e, &ps->host, e->u.host.ptr, e->u.host.size, 0);
        run_of(r, ps, e->tid)->closed = 1;   /* the thread's next release is another call's */
        break;
    case TF_EV_HOST_FREE:
        /* A resize (realloc, mremap) releases the old block, not the
         * buffer: the data lives on in the new one, whatever runs around. */
        host_freed(r, ps, e, resize(e->u.host.api) ? 0 : gc_seq);
        break;
    case TF_EV_PY_DOUBLE_INIT:
        double_init(r, ps, e);
        return;
    case TF_EV_PY_ALLOC:
        if (e->u.host.ptr)
            object_allocated(r, ps, e);
        return;
    case TF_EV_PY_FREE:
        object_freed(r, ps, e, gc_seq);
        return;
    default:
        return;
    }
    note_memory(r, ps, e);
}

/* The modules a stack's frames are in, looked up while they are loaded (a
 * bundle needs their files to resolve the stacks elsewhere). */
static void note_modules(rpt *r, pass *ps, uint32_t stack)
{
    const uint64_t *ips;
    uint32_t n;
    if (!stack || rp_ptrmap_get(&ps->stacks_seen, stack) || !tf_reader_native_stack(r->reader, stack, &ips, &n))
        return;
    rp_ptrmap_put(&ps->stacks_seen, stack, 1);
    for (uint32_t i = 0; i < n; i++) {
        const tf_module *m = tf_reader_stack_module(r->reader, stack, ips[i]);
        if (m && !rp_ptrmap_get(&ps->modules_seen, m->id)) {
            rp_ptrmap_put(&ps->modules_seen, m->id, 1);
            rp_grow(&r->modules_on_stacks, &ps->capmodules, r->nmodules_on_stacks + 1, sizeof *r->modules_on_stacks);
            r->modules_on_stacks[r->nmodules_on_stacks++] = m->id;
        }
    }
}

static int by_id(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The report's subscriber: counts, the model-free checks, the accounting. */
static int event(void *ctx, const tf_event *e, const rp_where *w)
{
    pass *ps = ctx;
    rpt *r = ps->r;
    note_modules(r, ps, e->native_stack);
    if (!r->events)
        r->t_first = e->t_ns;
    r->events++;
    r->t_last = e->t_ns;
    r->kinds[e->kind < TF_KIND_MAX ? e->kind : 0]++;
    count_thread(r, ps, e->tid);
    /* Events are missing before this one (segments deleted to keep the log
     * within TRACE_MAX_BYTES): from here the checks go on with partial
     * history, as the driver's do (a free of a block from before is not a
     * finding). */
    if (e->flags & TF_EVENT_AFTER_GAP) {
        /* A fork's child starts after a gap (INFO forked): nothing of its
         * log was deleted. */
        if (r->events == 1 && rpt_info_value(r, "forked"))
            r->after_fork = 1;
        else
            r->events_deleted = 1;
        rp_checks_forget(ps->checks);
        /* Allocations are missing: an address's last py_alloc before the
         * gap may not be the object a later py_free releases. */
        live_free(&ps->py_objects);
        live_init(&ps->py_objects);
    }
    rp_finding v;
    /* A segment the pool obtained: told with pool_segment grow, a device
     * allocation nested in its operation, or both (once). */
    uint32_t seg_pool = e->kind == TF_EV_POOL_SEGMENT && e->u.segment.grow == TF_SEGMENT_GROW ? e->u.segment.pool
                        : e->kind == TF_EV_CUDA_ALLOC ? w->owner_pool : 0;
    uint64_t segs_before = seg_pool ? rp_checks_pool(ps->checks, seg_pool).segments : 0;
    if (rp_checks_event(ps->checks, e, w->owner_pool, &v)) {
        if (r->nviolations < RPT_MAX_VIOLATIONS)
            r->violations[r->nviolations++] = v;
        r->total_violations++;
    }
    if (seg_pool && rp_checks_pool(ps->checks, seg_pool).segments > segs_before)
        pool_of(r, ps, seg_pool)->segments++;
    if (e->kind >= TF_EV_POOL_ALLOC && e->kind <= TF_EV_POOL_SEGMENT && e->kind != TF_EV_POOL_OP_END)
        pool_event(r, ps, e, w->up);
    account(r, ps, e, w);
    if (e->kind == TF_EV_GC_START || e->kind == TF_EV_GC_STOP)
        collection(r, ps, e);
    return 0;
}

static const char *pool_name(void *reader, uint32_t pool)
{
    return tf_reader_pool_name(reader, pool);
}

/* The replay driver, as check runs it: stops at the first violation. */
static int start_models(rpt *r, pass *ps, const char *model, char *err, size_t errlen)
{
    rp_options o;
    memset(&o, 0, sizeof o);
    o.pool_name = pool_name;
    o.pool_name_ctx = (void *)r->reader;
    /* Collections placed by the same stacks, options learnt the same way,
     * as check does. */
    rp_model_inputs_init(&ps->inputs, r->stacks, NULL, r->reader, NULL, 0);
    rp_model_inputs_attach(&ps->inputs, &o);
    if (!strcmp(model, "auto"))
        o.model_auto = 1;
    else if (!(o.model = rp_model_find(model))) {
        snprintf(err, errlen, "unknown model '%s'", model);
        return -1;
    }
    ps->replay = rp_replay_new(&o);
    r->model_name = model;
    return 0;
}

int rpt_open(rpt *r, const char *path, const rpt_options *o, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    tf_reader *rd = tf_reader_open(path, err, errlen);
    if (!rd)
        return -1;
    /* A file of several logs (joined with cat): the one asked for. */
    tf_event skip;
    for (int n = 1; n < o->run; n++) {
        while (tf_reader_next(rd, &skip))
            ;
        if (!tf_reader_next_run(rd)) {
            snprintf(err, errlen, "the file holds %d log(s), not %d", n, o->run);
            tf_reader_close(rd);
            return -1;
        }
    }
    r->run = o->run > 1 ? o->run : 1;
    pass *ps = rp_xcalloc(1, sizeof *ps);
    r->reader = rd;
    r->path = path;
    r->priv = ps;
    ps->r = r;
    ps->progress = o->progress ? o->progress : "trace-replay report";
    rp_ptrmap_init(&ps->thread_index);
    r->stacks = rn_stacks_new(rd, o->debug_dirs, o->ndebug_dirs);
    ps->checks = rp_checks_new();
    live_init(&ps->direct_dev);
    live_init(&ps->vmm_direct);
    live_init(&ps->vmm_pooled);
    live_init(&ps->pool_blocks);
    live_init(&ps->host);
    live_init(&ps->py_objects);
    rp_ptrmap_init(&ps->site_index);
    rp_ptrmap_init(&ps->dinit_index);
    rp_ptrmap_init(&ps->native_site);
    rp_ptrmap_init(&ps->site_by_stacks);
    rp_ptrmap_init(&ps->pool_site_by_stacks);
    rp_ptrmap_init(&ps->library_code);
    rpt_canon_init(&ps->canon, rd, r->stacks);
    rp_ptrmap_init(&ps->stack_index);
    rp_ptrmap_init(&ps->host_stack_index);
    rp_ptrmap_init(&ps->stack_by_content);
    rp_ptrmap_init(&ps->host_stack_by_content);
    rp_ptrmap_init(&ps->stacks_seen);
    rp_ptrmap_init(&ps->modules_seen);
    rpt_series_init(&r->series);
    return o->model ? start_models(r, ps, o->model, err, errlen) : 0;
}

void rpt_read(rpt *r, const rp_subscriber *follow)
{
    pass *ps = r->priv;
    tf_reader *rd = (tf_reader *)r->reader;
    rp_walk *walk = rp_walk_new();
    rp_subscriber self = {ps, event, NULL};
    rp_walk_subscribe(walk, &self);
    if (ps->replay)
        rp_replay_attach(ps->replay, walk);
    if (follow)
        rp_walk_subscribe(walk, follow);
    rp_progress pg;
    rp_progress_start(&pg, ps->progress);
    tf_event e;
    while (tf_reader_next(rd, &e)) {
        rp_walk_event(walk, &e);
        rp_progress_tick(&pg, e.seq);
    }
    rp_progress_done(&pg);
    rp_walk_end(walk);
    rp_walk_free(walk);
    r->status = tf_reader_status(rd);
    r->damage = tf_reader_damage(rd);
    /* A gap the reader took for damage (a frame lost whole, a corrupt one)
     * is no deleted segment: the events were in the log and are not now.
     * Both can come in one log; neither status said: as before. */
    if (r->events_deleted) {
        int damaged = r->status->seq_gaps || r->status->corrupt_frames;
        r->events_missing = damaged;
        r->events_deleted = r->status->gaps || r->status->lost_events || !damaged;
    }
    if (r->status->clean_end)
        rp_checks_end(ps->checks);
    r->nwarnings = rp_checks_warnings(ps->checks, &r->warnings, &r->total_warnings);
    if (ps->replay) {
        rp_replay_finish(ps->replay, r->status->clean_end);
        r->model = rp_replay_result(ps->replay);
    }
    if (r->nmodules_on_stacks)
        qsort(r->modules_on_stacks, r->nmodules_on_stacks, sizeof *r->modules_on_stacks, by_id);
    for (uint32_t i = 0; i < r->npools; i++) {
        rp_pool_figures f = rp_checks_pool(ps->checks, r->pools[i].id);
        r->pools[i].peak_reserved = f.peak_reserved;
        r->pools[i].peak_allocated = f.peak_allocated;
    }
}

void rpt_free(rpt *r)
{
    pass *ps = r->priv;
    if (ps) {
        rp_checks_free(ps->checks);
        rp_replay_free(ps->replay);
        rp_model_inputs_free(&ps->inputs);
        rp_ptrmap_free(&ps->thread_index);
        live_free(&ps->direct_dev);
        live_free(&ps->vmm_direct);
        live_free(&ps->vmm_pooled);
        live_free(&ps->pool_blocks);
        live_free(&ps->host);
        for (size_t i = 0; i < ps->nruns; i++)
            free(ps->runs[i].cuts);
        free(ps->runs);
        live_free(&ps->py_objects);
        rp_ptrmap_free(&ps->site_index);
        rp_ptrmap_free(&ps->dinit_index);
        rp_ptrmap_free(&ps->native_site);
        rp_ptrmap_free(&ps->site_by_stacks);
        rp_ptrmap_free(&ps->pool_site_by_stacks);
        rp_ptrmap_free(&ps->library_code);
        rpt_canon_free(&ps->canon);
        rp_ptrmap_free(&ps->stack_index);
        rp_ptrmap_free(&ps->host_stack_index);
        rp_ptrmap_free(&ps->stack_by_content);
        rp_ptrmap_free(&ps->host_stack_by_content);
        rp_ptrmap_free(&ps->stacks_seen);
        rp_ptrmap_free(&ps->modules_seen);
        rp_ptrmap_free(&ps->pool_index);
        free(ps);
    }
    rn_stacks_free(r->stacks);
    if (r->reader)
        tf_reader_close((tf_reader *)r->reader);
    rpt_series_free(&r->series);
    free(r->sites);
    free(r->pools);
    free(r->modules_on_stacks);
    free(r->dev_stacks);
    free(r->host_stacks);
    free(r->collections);
    free(r->dinits);
    free(r->threads);
    memset(r, 0, sizeof *r);
}

void rpt_memory_now(const rpt *r, uint64_t v[RPT_SERIES_MEASURES])
{
    memcpy(v, r->series.last, sizeof r->series.last);
}
