/*
 * pool_stream.h - a CuPy-like event stream for the column-block tests: a
 * best-fit pool over segments that splits free blocks and merges them back,
 * several threads, a few call sites, pool operations around every request,
 * a collection now and then, times in microseconds.  What a real pool's
 * stream looks like to the format: frees name recent blocks, allocations
 * reuse what was freed, grants are requests rounded to 512 bytes.
 */
#ifndef POOL_STREAM_H
#define POOL_STREAM_H

#include "tf_test.h"

#define PS_BLOCKS 256
#define PS_THREADS 4

typedef struct pool_stream {
    uint64_t rng, seq, t;
    uint64_t live[PS_BLOCKS], live_size[PS_BLOCKS];
    unsigned nlive;
    uint64_t free_at[PS_BLOCKS * 2], free_size[PS_BLOCKS * 2];
    unsigned nfree;
    uint64_t next_segment;
    uint32_t native[8], py[8];
} pool_stream;

static inline void ps_init(pool_stream *ps, tf_writer *w, uint64_t seed, uint64_t first_seq)
{
    memset(ps, 0, sizeof *ps);
    ps->rng = seed | 1;
    ps->seq = first_seq;
    ps->t = 5000000000ull;
    ps->next_segment = 0x7f2000000000ull;
    for (int i = 0; i < 8; i++) {
        uint64_t ips[3] = { 0x400000u + 64u * (unsigned)i, 0x401000, 0x402000 };
        ps->native[i] = tf_write_native_stack(w, ips, 3);
        tf_py_frame f = { tf_write_py_code(w, tf_write_string(w, "train.py", 8), 0, 1),
                          (uint32_t)(10 + i) };
        ps->py[i] = tf_write_py_stack(w, &f, 1);
    }
}

static inline void ps_event(pool_stream *ps, tf_event *e, uint32_t kind, uint32_t tid, uint64_t parent,
                            int site)
{
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->seq = ++ps->seq;
    ps->t += 1000 * (tf_test_rand(&ps->rng) % 3);
    e->t_ns = ps->t;
    e->tid = tid;
    e->parent = parent;
    e->native_stack = ps->native[site];
    e->py_stack = ps->py[site];
}

/* One request: an allocation or a free, bracketed by its pool operation. */
static inline void ps_step(pool_stream *ps, tf_writer *w)
{
    tf_event e;
    uint32_t tid = 2000 + (uint32_t)(tf_test_rand(&ps->rng) % PS_THREADS);
    int site = (int)(tf_test_rand(&ps->rng) % 8);
    int do_free = ps->nlive > 0 && (ps->nlive >= PS_BLOCKS - 1 || tf_test_rand(&ps->rng) % 2);
    if (tf_test_rand(&ps->rng) % 200 == 0) {
        ps_event(ps, &e, TF_EV_GC_START, tid, 0, site);
        e.u.gc.generation = (int32_t)(tf_test_rand(&ps->rng) % 3);
        e.u.gc.allocs[0] = 700 + tf_test_rand(&ps->rng) % 20;
        tf_write_event(w, &e);
        ps_event(ps, &e, TF_EV_GC_STOP, tid, 0, site);
        e.u.gc.collected = tf_test_rand(&ps->rng) % 50;
        e.u.gc.duration_ns = 1000 * (tf_test_rand(&ps->rng) % 900);
        tf_write_event(w, &e);
    }
    if (do_free) {
        unsigned i = (unsigned)(tf_test_rand(&ps->rng) % ps->nlive);
        if (tf_test_rand(&ps->rng) % 4)
            i = ps->nlive - 1 - (unsigned)(tf_test_rand(&ps->rng) % (ps->nlive < 4 ? ps->nlive : 4));
        uint64_t p = ps->live[i], size = ps->live_size[i];
        ps->live[i] = ps->live[--ps->nlive];
        ps->live_size[i] = ps->live_size[ps->nlive];
        ps_event(ps, &e, TF_EV_POOL_OP_BEGIN, tid, 0, site);
        e.u.pool_op.op = TF_POOL_OP_FREE;
        e.u.pool_op.arg = p;
        uint64_t op = e.seq;
        tf_write_event(w, &e);
        ps_event(ps, &e, TF_EV_POOL_FREE, tid, op, site);
        e.u.pool.ptr = p;
        e.u.pool.granted = size;
        tf_write_event(w, &e);
        ps_event(ps, &e, TF_EV_POOL_OP_END, tid, 0, site);
        e.u.pool_op.op = TF_POOL_OP_FREE;
        e.u.pool_op.begin = op;
        tf_write_event(w, &e);
        if (ps->nfree < PS_BLOCKS * 2) {
            ps->free_at[ps->nfree] = p;
            ps->free_size[ps->nfree++] = size;
        }
        return;
    }
    static const uint64_t sizes[] = { 400, 4000, 4096, 1 << 16, 1000000, 123456, 512, 8 << 20 };
    uint64_t req = sizes[tf_test_rand(&ps->rng) % 8] + (tf_test_rand(&ps->rng) % 3 ? 0 : tf_test_rand(&ps->rng) % 4096);
    uint64_t granted = (req + 511) / 512 * 512;
    ps_event(ps, &e, TF_EV_POOL_OP_BEGIN, tid, 0, site);
    e.u.pool_op.op = TF_POOL_OP_ALLOC;
    e.u.pool_op.arg = req;
    uint64_t op = e.seq;
    tf_write_event(w, &e);
    unsigned best = ps->nfree;
    for (unsigned i = 0; i < ps->nfree; i++)
        if (ps->free_size[i] >= granted && (best == ps->nfree || ps->free_size[i] < ps->free_size[best]))
            best = i;
    uint64_t p;
    if (best == ps->nfree) {
        uint64_t seg = granted < (2 << 20) ? 2 << 20 : (granted + (2 << 20) - 1) / (2 << 20) * (2 << 20);
        ps_event(ps, &e, TF_EV_CUDA_ALLOC, tid, op, site);
        e.u.cuda.api = TF_API_cudaMalloc;
        e.u.cuda.ptr = ps->next_segment;
        e.u.cuda.size = seg;
        tf_write_event(w, &e);
        ps_event(ps, &e, TF_EV_POOL_SEGMENT, tid, op, site);
        e.u.segment.grow = TF_SEGMENT_GROW;
        e.u.segment.ptr = ps->next_segment;
        e.u.segment.size = seg;
        tf_write_event(w, &e);
        p = ps->next_segment;
        ps->next_segment += seg + (1 << 21);
        if (seg > granted && ps->nfree < PS_BLOCKS * 2) {
            ps->free_at[ps->nfree] = p + granted;
            ps->free_size[ps->nfree++] = seg - granted;
        }
    } else {
        p = ps->free_at[best];
        if (ps->free_size[best] > granted) {
            ps->free_at[best] += granted;
            ps->free_size[best] -= granted;
        } else {
            ps->free_at[best] = ps->free_at[--ps->nfree];
            ps->free_size[best] = ps->free_size[ps->nfree];
        }
    }
    ps_event(ps, &e, TF_EV_POOL_ALLOC, tid, op, site);
    e.u.pool.ptr = p;
    e.u.pool.requested = req;
    e.u.pool.granted = granted;
    tf_write_event(w, &e);
    ps_event(ps, &e, TF_EV_POOL_OP_END, tid, 0, site);
    e.u.pool_op.op = TF_POOL_OP_ALLOC;
    e.u.pool_op.begin = op;
    tf_write_event(w, &e);
    ps->live[ps->nlive] = p;
    ps->live_size[ps->nlive++] = granted;
}

#endif
