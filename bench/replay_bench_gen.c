/*
 * replay_bench_gen.c - synthetic logs for bench/replay_bench.sh.
 *
 *     replay-bench-gen OUT.log EVENTS [--big-garbage] [--double-free]
 *
 * A CuPy-like workload, deterministic (a fixed LCG): requests of 512 bytes to
 * 256 KiB, about 2000 blocks live, a collection every 300 operations freeing
 * a few blocks that became garbage earlier.  Addresses come from running the
 * cupy model itself, so the log is what CuPy 5.4+ would have recorded and a
 * replay follows it without divergence.  Every operation is bracketed
 * (op_begin .. op_end); new segments show as pool_segment grow inside the
 * allocation.  --big-garbage makes each collected block a new largest size
 * (1 MiB and up, one bin each), in a segment of its own: explore's injected
 * frees then only append bins past every index they could disturb, so
 * nothing breaks and explore must walk the whole log (its worst case).
 * --double-free ends the log with a block freed twice (the second free not
 * given to the model): every replay reads the whole log to find it, and
 * minimize has the whole log to shrink (bench/replay_bench.sh measures their
 * memory on it).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "trace_format.h"

#define LIVE_TARGET 2000
#define GC_EVERY 300
#define GARBAGE_PER_GC 4

typedef struct gen {
    tf_writer *w;
    tf_chunk chunk;
    int fd;
    uint64_t seq, events, rng, next_segment;
    void *model;
    uint64_t live[LIVE_TARGET * 2];
    size_t nlive;
    uint64_t garbage[64];
    size_t ngarbage;
    uint64_t segment_ptr, segment_size;  /* the growth of the current op */
    uint32_t stacks[4];
    int big_garbage;
    uint64_t ngarbage_made;
} gen;

static uint64_t rnd(gen *g)
{
    g->rng = g->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return g->rng >> 33;
}

static uint64_t host_segment(void *ctx, uint64_t *sizep, uint64_t at)
{
    gen *g = ctx;
    uint64_t size = *sizep;
    (void)at;
    g->segment_ptr = g->next_segment;
    g->segment_size = size;
    g->next_segment += (size + 0xfffff) & ~0xfffffULL;
    return g->segment_ptr;
}

static void host_reenter(void *ctx, const char *point) { (void)ctx, (void)point; }

static void host_violation(void *ctx, const char *inv, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "replay-bench-gen: the model broke %s: %s\n", inv, msg);
    exit(1);
}

static uint64_t emit(gen *g, tf_event *e, uint64_t parent)
{
    e->seq = ++g->seq;
    e->tid = 1;
    e->t_ns = g->seq * 100;
    e->parent = parent;
    e->native_stack = g->stacks[g->seq % 4];
    tf_write_event(g->w, e);
    g->events++;
    if (tf_writer_pending(g->w) > (4u << 20)) {
        tf_writer_seal(g->w, &g->chunk);
        if (tf_chunk_write(g->fd, &g->chunk, NULL, 1)) {
            perror("replay-bench-gen: write");
            exit(2);
        }
    }
    return e->seq;
}

static uint64_t op_begin(gen *g, uint32_t op, uint64_t arg, uint64_t parent)
{
    tf_event e = {.kind = TF_EV_POOL_OP_BEGIN};
    e.u.pool_op.pool = 1;
    e.u.pool_op.op = op;
    e.u.pool_op.arg = arg;
    return emit(g, &e, parent);
}

static void op_end(gen *g, uint64_t begin, uint64_t parent)
{
    tf_event e = {.kind = TF_EV_POOL_OP_END};
    e.u.pool_op.pool = 1;
    e.u.pool_op.begin = begin;
    emit(g, &e, parent);
}

static uint64_t do_alloc(gen *g, uint64_t size)
{
    rp_host h = {.ctx = g, .reenter = host_reenter, .segment = host_segment, .violation = host_violation,
                 .warning = host_violation};
    uint64_t op = op_begin(g, TF_POOL_OP_ALLOC, size, 0), ptr, granted;
    g->segment_size = 0;
    if (rp_model_cupy.alloc(g->model, size, 0, &h, &ptr, &granted) != RP_OK)
        exit(1);
    if (g->segment_size) {
        tf_event s = {.kind = TF_EV_POOL_SEGMENT};
        s.u.segment = (__typeof__(s.u.segment)){1, TF_SEGMENT_GROW, g->segment_ptr, g->segment_size};
        emit(g, &s, op);
    }
    tf_event a = {.kind = TF_EV_POOL_ALLOC};
    a.u.pool = (__typeof__(a.u.pool)){1, ptr, size, granted, 0};
    emit(g, &a, op);
    op_end(g, op, 0);
    return ptr;
}

static void do_free(gen *g, uint64_t ptr, uint64_t parent)
{
    rp_host h = {.ctx = g, .reenter = host_reenter, .segment = host_segment, .violation = host_violation,
                 .warning = host_violation};
    uint64_t op = op_begin(g, TF_POOL_OP_FREE, ptr, parent);
    tf_event f = {.kind = TF_EV_POOL_FREE};
    f.u.pool = (__typeof__(f.u.pool)){1, ptr, 0, 0, 0};
    emit(g, &f, op);
    if (rp_model_cupy.free(g->model, ptr, 0, &h) != RP_OK)
        exit(1);
    op_end(g, op, parent);
}

static void collect(gen *g)
{
    tf_event s = {.kind = TF_EV_GC_START};
    uint64_t gc = emit(g, &s, 0);
    for (size_t i = 0; i < g->ngarbage; i++)
        do_free(g, g->garbage[i], gc);
    g->ngarbage = 0;
    tf_event e = {.kind = TF_EV_GC_STOP};
    emit(g, &e, 0);
}

static uint64_t request_size(gen *g)
{
    /* Log-uniform from 512 bytes to 256 KiB, not aligned. */
    int shift = 9 + (int)(rnd(g) % 10);
    return (1ULL << shift) + rnd(g) % (1ULL << shift);
}

int main(int argc, char **argv)
{
    gen g = {0};
    int double_free = 0, bad = argc < 3;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--big-garbage"))
            g.big_garbage = 1;
        else if (!strcmp(argv[i], "--double-free"))
            double_free = 1;
        else
            bad = 1;
    }
    if (bad) {
        fprintf(stderr, "usage: replay-bench-gen OUT.log EVENTS [--big-garbage] [--double-free]\n");
        return 2;
    }
    uint64_t target = strtoull(argv[2], NULL, 10);
    g.rng = 42;
    g.next_segment = 0x7f0000000000ULL;
    g.fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (g.fd < 0) {
        perror(argv[1]);
        return 2;
    }
    tf_header hd = {.version_major = TF_VERSION_MAJOR, .version_minor = TF_VERSION_MINOR, .pid = 1, .ppid = 1,
                    .hostname = "bench", .cmdline = "python bench.py", .exe = "/usr/bin/python3",
                    .tracer_version = "bench", .settings = "", .python_version = "3.11"};
    g.w = tf_writer_new(&hd);
    tf_write_pool(g.w, 1, "cupy");
    for (int i = 0; i < 4; i++) {
        uint64_t ips[3] = {0x401000 + 16 * (uint64_t)i, 0x402000, 0x403000};
        g.stacks[i] = tf_write_native_stack(g.w, ips, 3);
    }
    g.model = rp_model_cupy.create();
    uint64_t ops = 0;
    while (g.events < target) {
        ops++;
        if (ops % GC_EVERY == 0) {
            collect(&g);
        } else if (g.ngarbage < GARBAGE_PER_GC && rnd(&g) % 50 == 0) {
            uint64_t size = g.big_garbage ? (1ULL << 20) + 512 * g.ngarbage_made++ : request_size(&g);
            g.garbage[g.ngarbage++] = do_alloc(&g, size);
        } else if (g.nlive < LIVE_TARGET / 2 || (g.nlive < LIVE_TARGET * 2 && rnd(&g) % 2)) {
            g.live[g.nlive++] = do_alloc(&g, request_size(&g));
        } else {
            size_t i = rnd(&g) % g.nlive;
            do_free(&g, g.live[i], 0);
            g.live[i] = g.live[--g.nlive];
        }
    }
    if (double_free && g.nlive) {
        uint64_t ptr = g.live[0];
        do_free(&g, ptr, 0);
        uint64_t op = op_begin(&g, TF_POOL_OP_FREE, ptr, 0);
        tf_event f = {.kind = TF_EV_POOL_FREE};
        f.u.pool = (__typeof__(f.u.pool)){1, ptr, 0, 0, 0};
        emit(&g, &f, op);
        op_end(&g, op, 0);
    }
    tf_event end = {.kind = TF_EV_END};
    emit(&g, &end, 0);
    tf_writer_seal(g.w, &g.chunk);
    int rc = tf_chunk_write(g.fd, &g.chunk, NULL, 1);
    close(g.fd);
    tf_chunk_free(&g.chunk);
    tf_writer_free(g.w);
    rp_model_cupy.destroy(g.model);
    fprintf(stderr, "replay-bench-gen: %llu events, %llu operations\n", (unsigned long long)g.events,
            (unsigned long long)ops);
    return rc ? 2 : 0;
}
