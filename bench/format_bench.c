/*
 * format_bench.c - writer and reader throughput and compressed size on a
 * realistic event stream (driven by format_bench.sh; not a test).
 *
 * The stream is a training loop (make_loop_stream): pool alloc/free pairs
 * with a few hundred 32-frame native stacks and Python stacks, a few loader
 * threads, timing jitter, and GC events.  Times are CPU time of this thread,
 * best of three runs, because the machine may be shared.
 *
 *   format-bench [EVENTS [ZSTD_LEVEL]]
 *   format-bench encode|decode [EVENTS [RUNS]]
 *
 * The second form times one phase alone, column encoding of the sealed
 * chunks or column decoding of their blocks, best of RUNS (5): the loop a
 * profiler or callgrind looks at, nothing else running in it (callgrind's
 * --toggle-collect=phase_loop counts its instructions alone).  Both print
 * a hash of the blocks the stream made: the blocks are the format, and an
 * encoder made faster must make the same bytes (compare two builds).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "columns.h"
#include "trace_format.h"
#include "varint.h"

#define NTHREADS 6
#define NSTACKS 400
#define NPYSTACKS 150
#define DEPTH 32
#define CHUNK_SEAL (256u * 1024)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine may be shared */
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t stacks[NSTACKS][DEPTH];

static void make_stacks(tf_writer *w, uint32_t *native_ids, uint32_t *py_ids)
{
    /* Frames come from a handful of libraries; stacks share their outer part. */
    static const uint64_t bases[4] = { 0x7f3a12000000ull, 0x7f3a20400000ull,
                                       0x55d0c8a00000ull, 0x7f3a33c00000ull };
    for (int s = 0; s < NSTACKS; s++) {
        for (int d = 0; d < DEPTH; d++) {
            int shared = d >= DEPTH / 2 && s > 0;
            stacks[s][d] = shared ? stacks[s / 2][d]
                                  : bases[rnd() % 4] + (rnd() % 0x200000);
        }
        native_ids[s] = tf_write_native_stack(w, stacks[s], DEPTH);
    }
    uint32_t code[64];
    for (int c = 0; c < 64; c++) {
        char name[32];
        int n = snprintf(name, sizeof name, "module_%d.py", c % 16);
        uint32_t file = tf_write_string(w, name, (size_t)n);
        n = snprintf(name, sizeof name, "function_%d", c);
        code[c] = tf_write_py_code(w, file, tf_write_string(w, name, (size_t)n), 10 + c);
    }
    for (int s = 0; s < NPYSTACKS; s++) {
        tf_py_frame f[16];
        uint32_t n = 4 + (uint32_t)(rnd() % 12);
        for (uint32_t i = 0; i < n; i++)
            f[i] = (tf_py_frame){ code[rnd() % 64], 10 + (uint32_t)(rnd() % 400) };
        py_ids[s] = tf_write_py_stack(w, f, n);
    }
}

/* A training loop: every iteration runs the same program of steps (same
 * stacks, same sizes, and with a caching pool mostly the same addresses),
 * with timing jitter, a few data-dependent sizes, loader threads doing host
 * allocations, a nested cudaMalloc while the pool warms up, and a GC every
 * few thousand events.  This is the stream the recorder sees in practice. */
#define STEPS 240
typedef struct step {
    uint32_t kind, native, py, tid, gap_ns;
    uint64_t size, ptr;
    int frees;          /* a free step releases the block of step `frees` */
} step;

/* An earlier allocation step not yet freed, or -1. */
static int unfreed_alloc(const step *prog, int k)
{
    int start = (int)(rnd() % (uint64_t)k);
    for (int d = 0; d < k; d++) {
        int j = (start + d) % k;
        if ((prog[j].kind == TF_EV_POOL_ALLOC || prog[j].kind == TF_EV_HOST_ALLOC) &&
            prog[j].frees == -1)
            return j;
    }
    return -1;
}

static void make_program(step *prog, const uint32_t *native_ids, const uint32_t *py_ids)
{
    uint64_t next_ptr = 0x7f0000000000ull;
    for (int k = 0; k < STEPS; k++) {
        step *p = &prog[k];
        p->native = native_ids[rnd() % NSTACKS];
        p->py = py_ids[rnd() % NPYSTACKS];
        p->gap_ns = 200 + (uint32_t)(rnd() % 3000);
        p->tid = rnd() % 10 ? 41000 : 41000 + 7 * (1 + (uint32_t)(rnd() % (NTHREADS - 1)));
        p->frees = -1;
        int j = k >= 8 && rnd() % 2 == 0 ? unfreed_alloc(prog, k) : -1;
        if (j >= 0) {
            prog[j].frees = -2;  /* taken */
            p->kind = prog[j].kind == TF_EV_HOST_ALLOC ? TF_EV_HOST_FREE : TF_EV_POOL_FREE;
            p->frees = j;
            p->tid = prog[j].tid;
            continue;
        }
        p->kind = p->tid == 41000 ? TF_EV_POOL_ALLOC : TF_EV_HOST_ALLOC;
        p->size = (rnd() & 1) ? (uint64_t)512 << (rnd() % 12) : 512 * (1 + rnd() % 64);
        p->ptr = p->kind == TF_EV_HOST_ALLOC ? 0x5600000000ull + (rnd() % 4096) * 4096 : next_ptr;
        next_ptr += p->size;
    }
}

/* Times are whole microseconds, as the recorder writes them (its default
 * time_unit_ns is 1000: recorder.c in_unit).  With nanosecond times every
 * column block fell back to a 1 ns unit, and the bench measured a size
 * (2.27 bytes/event against 0.87) and a coding path the recorder never
 * makes. */
static tf_event *emit(tf_event *ev, size_t *i, uint64_t *seq, uint64_t t)
{
    tf_event *e = &ev[(*i)++];
    memset(e, 0, sizeof *e);
    e->seq = ++*seq;
    e->t_ns = t - t % 1000;
    return e;
}

/* Fills ev[0..n) with the stream; returns how many were made. */
static size_t make_loop_stream(tf_event *ev, size_t n, const uint32_t *native_ids,
                               const uint32_t *py_ids)
{
    static step prog[STEPS];
    make_program(prog, native_ids, py_ids);
    uint64_t t = 1000000, seq = 0, ptrs[STEPS] = { 0 };
    size_t i = 0;
    for (int iter = 0; i + 4 < n; iter++) {
        for (int k = 0; k < STEPS && i + 4 < n; k++) {
            const step *p = &prog[k];
            t += p->gap_ns + rnd() % 64;
            tf_event *e = emit(ev, &i, &seq, t);
            e->kind = p->kind;
            e->tid = p->tid;
            e->native_stack = p->native;
            e->py_stack = p->py;
            if (p->kind == TF_EV_POOL_FREE || p->kind == TF_EV_HOST_FREE) {
                e->u.pool.ptr = ptrs[p->frees];  /* host.ptr shares the offset */
                if (p->kind == TF_EV_HOST_FREE)
                    e->u.host = (typeof(e->u.host)){ TF_HOST_OTHER, ptrs[p->frees], 0, 0 };
                continue;
            }
            uint64_t size = rnd() % 16 ? p->size : p->size + 512 * (rnd() % 8);
            ptrs[k] = rnd() % 32 ? p->ptr : p->ptr + 0x100000000ull + 512 * (rnd() % 1024);
            if (p->kind == TF_EV_HOST_ALLOC) {
                e->u.host = (typeof(e->u.host)){ TF_HOST_OTHER, ptrs[k], size, 0 };
                continue;
            }
            e->u.pool = (typeof(e->u.pool)){ 0, ptrs[k], size - size % 512 / 2, size, 0 };
            if (iter < 3 && rnd() % 8 == 0) {  /* the pool grows while warming up */
                tf_event *c = emit(ev, &i, &seq, t + 40);
                c->kind = TF_EV_CUDA_ALLOC;
                c->tid = e->tid;
                c->parent = e->seq;
                c->native_stack = native_ids[0];
                c->u.cuda.api = TF_API_cudaMalloc;
                c->u.cuda.ptr = ptrs[k] & ~0x1fffffull;
                c->u.cuda.size = 2u << 20;
            }
        }
        if (iter % 10 == 9) {  /* a generation-0 collection */
            tf_event *g = emit(ev, &i, &seq, t += 500);
            g->kind = TF_EV_GC_START;
            g->tid = 41000;
            g->native_stack = native_ids[1];
            g->py_stack = py_ids[1];
            g->u.gc.allocs[0] = 701 + rnd() % 20;
            g = emit(ev, &i, &seq, t += 30000 + rnd() % 20000);
            g->kind = TF_EV_GC_STOP;
            g->tid = 41000;
            g->u.gc.collected = rnd() % 100;
            g->u.gc.duration_ns = 30000;
        }
    }
    return i;
}

/* The definitions every run's writer starts with. */
static tf_writer *new_writer(uint32_t *native_ids, uint32_t *py_ids)
{
    static const tf_header h = { .pid = 1, .cmdline = "bench" };
    tf_writer *w = tf_writer_new(&h);
    rng = 0x9e3779b97f4a7c15ull;  /* the same stacks, under the same ids, every time */
    make_stacks(w, native_ids, py_ids);
    return w;
}

/* Writes the stream into a fresh memory file (its pages allocated up front
 * so the timing is ours, not the kernel's page clearing); returns the CPU
 * seconds taken, and the file in *fd_out. */
static double write_run(const tf_event *ev, size_t n, int level, tf_colenc *enc, int *fd_out)
{
    uint32_t native_ids[NSTACKS], py_ids[NPYSTACKS];
    tf_writer *w = new_writer(native_ids, py_ids);
    int fd = memfd_create("bench", 0);
    if (fd < 0 || fallocate(fd, 0, 0, (off_t)(n * 8)) != 0) {
        perror("memfd");
        exit(1);
    }
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    tf_chunk chunk = { 0 };
    double t0 = now();
    for (size_t i = 0; i < n; i++) {
        tf_write_event(w, &ev[i]);
        if (tf_writer_pending(w) >= CHUNK_SEAL) {
            tf_writer_seal(w, &chunk);
            tf_chunk_write_columns(fd, &chunk, enc, 1000, cctx, level);
        }
    }
    tf_writer_seal(w, &chunk);
    tf_chunk_write_columns(fd, &chunk, enc, 1000, cctx, level);
    double t = now() - t0;
    if (ftruncate(fd, lseek(fd, 0, SEEK_CUR)) != 0) {
        perror("ftruncate");
        exit(1);
    }
    ZSTD_freeCCtx(cctx);
    tf_writer_free(w);
    tf_chunk_free(&chunk);
    *fd_out = fd;
    return t;
}

/* Encoding alone: what the recorder spends under its lock per event (the
 * compression runs later, on the flushing thread). */
static double encode_run(const tf_event *ev, size_t n)
{
    uint32_t native_ids[NSTACKS], py_ids[NPYSTACKS];
    tf_writer *w = new_writer(native_ids, py_ids);
    tf_chunk chunk = { 0 };
    double t0 = now();
    for (size_t i = 0; i < n; i++) {
        tf_write_event(w, &ev[i]);
        if (tf_writer_pending(w) >= CHUNK_SEAL)
            tf_writer_seal(w, &chunk);
    }
    double t = now() - t0;
    tf_writer_free(w);
    tf_chunk_free(&chunk);
    return t;
}

/* Reads the file back; returns the CPU seconds taken. */
static double read_run(int fd, size_t n)
{
    char path[64], err[256];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    double t0 = now();
    tf_reader *r = tf_reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    tf_event e;
    size_t got = 0;
    while (tf_reader_next(r, &e))
        got++;
    tf_reader_close(r);
    double t = now() - t0;
    if (got != n) {
        fprintf(stderr, "read %zu events of %zu\n", got, n);
        exit(1);
    }
    return t;
}

/* Where the default path's time goes, phase by phase over the same sealed
 * chunks: column encoding, compression, decompression, column decoding.
 * Each phase is timed alone (best of three), in ns per event. */
typedef struct phases { double colenc, compress, decompress, decode; } phases;

static phases phase_run(const tf_event *ev, size_t n, int level, tf_colenc *enc)
{
    uint32_t native_ids[NSTACKS], py_ids[NPYSTACKS];
    tf_writer *w = new_writer(native_ids, py_ids);
    size_t nchunks = 0, cap = 64;
    tf_chunk *chunks = calloc(cap, sizeof *chunks);
    for (size_t i = 0; i <= n; i++) {
        if (i < n)
            tf_write_event(w, &ev[i]);
        if (i == n || tf_writer_pending(w) >= CHUNK_SEAL) {
            if (nchunks == cap)
                chunks = realloc(chunks, (cap *= 2) * sizeof *chunks);
            tf_chunk *c = &chunks[nchunks++];
            *c = (tf_chunk){ 0 };
            tf_chunk sealed = { 0 };
            tf_writer_seal(w, &sealed);
            c->data = malloc(sealed.len);
            memcpy(c->data, sealed.data, sealed.len);
            c->len = c->cap = sealed.len;
            tf_chunk_free(&sealed);
        }
    }
    tf_writer_free(w);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    size_t bound = 0;
    for (size_t k = 0; k < nchunks; k++)
        bound = tf_chunk_bound(&chunks[k]) > bound ? tf_chunk_bound(&chunks[k]) : bound;
    uint8_t **frames = calloc(nchunks, sizeof *frames);
    size_t *flen = calloc(nchunks, sizeof *flen);
    uint8_t *plain = malloc(4 * bound);
    tf_colstate *st = calloc(1, sizeof *st);
    tf_event *items = NULL;
    size_t nitems = 0, items_cap = 0;
    phases best = { 1e30, 1e30, 1e30, 1e30 };
    for (int run = 0; run < 3; run++) {
        double colenc = 0, compress = 0, decompress = 0, decode = 0;
        for (size_t k = 0; k < nchunks; k++) {
            double t0 = now();
            int rc = tf_columns_encode(enc, chunks[k].data, chunks[k].len, 1000);
            double t1 = now();
            colenc += t1 - t0;
            /* The block as one buffer (not timed), compressed as the
             * writer does: level, checksum, one frame. */
            size_t blen = 0;
            if (rc == 0) {
                const void *piece[TF_COLUMNS + 1];
                size_t plen[TF_COLUMNS + 1];
                int np = tf_colenc_pieces(enc, piece, plen);
                for (int i = 0; i < np; i++) {
                    memcpy(plain + blen, piece[i], plen[i]);
                    blen += plen[i];
                }
            } else {
                memcpy(plain, chunks[k].data, chunks[k].len);
                blen = chunks[k].len;
            }
            if (!frames[k])
                frames[k] = malloc(bound);
            t0 = now();
            ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
            ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
            flen[k] = ZSTD_compress2(cctx, frames[k], bound, plain, blen);
            compress += now() - t0;
        }
        for (size_t k = 0; k < nchunks; k++) {
            double t0 = now();
            size_t m = ZSTD_decompressDCtx(dctx, plain, 4 * bound, frames[k], flen[k]);
            double t1 = now();
            decompress += t1 - t0;
            if (ZSTD_isError(m))
                continue;
            tf_cursor c = { plain, plain + m, 0 };
            if (tf_get_uv(&c) != TF_REC_COLUMNS)
                continue;
            uint64_t len = tf_get_uv(&c);
            const char *why;
            tf_columns_decode_items(st, c.p, len, &items, &nitems, &items_cap, &why);
            decode += now() - t1;
        }
        best.colenc = colenc < best.colenc ? colenc : best.colenc;
        best.compress = compress < best.compress ? compress : best.compress;
        best.decompress = decompress < best.decompress ? decompress : best.decompress;
        best.decode = decode < best.decode ? decode : best.decode;
    }
    for (size_t k = 0; k < nchunks; k++) {
        free(chunks[k].data);
        free(frames[k]);
    }
    free(chunks);
    free(frames);
    free(flen);
    free(plain);
    free(st);
    free(items);
    ZSTD_freeCCtx(cctx);
    ZSTD_freeDCtx(dctx);
    best.colenc = best.colenc / n * 1e9;
    best.compress = best.compress / n * 1e9;
    best.decompress = best.decompress / n * 1e9;
    best.decode = best.decode / n * 1e9;
    return best;
}

/* The recorder interns each event's stack: the cost of a lookup that hits. */
static double intern_ns(void)
{
    uint32_t native_ids[NSTACKS], py_ids[NPYSTACKS];
    tf_writer *w = new_writer(native_ids, py_ids);
    const int lookups = 1000000;
    uint32_t wrong = 0;
    double t0 = now();
    for (int i = 0; i < lookups; i++)
        wrong += tf_write_native_stack(w, stacks[i % NSTACKS], DEPTH) != native_ids[i % NSTACKS];
    double t = now() - t0;
    tf_writer_free(w);
    if (wrong) {
        fprintf(stderr, "intern lookups returned wrong ids\n");
        exit(1);
    }
    return t / lookups * 1e9;
}

/* One phase, `runs` times over the same chunks (encode) or blocks
 * (decode); the CPU seconds of each run into t[]. */
static __attribute__((noinline)) void phase_loop(int decode, tf_chunk *chunks, size_t nchunks,
                                                 uint8_t **blocks, size_t *blen, tf_colenc *enc,
                                                 int runs, double *t)
{
    tf_colstate *st = calloc(1, sizeof *st);
    tf_event *items = NULL;
    size_t nitems = 0, items_cap = 0;
    for (int run = 0; run < runs; run++) {
        double t0 = now();
        for (size_t k = 0; k < nchunks; k++) {
            if (!decode) {
                tf_columns_encode(enc, chunks[k].data, chunks[k].len, 1000);
                continue;
            }
            const char *why;
            if (blocks[k] &&
                tf_columns_decode_items(st, blocks[k], blen[k], &items, &nitems, &items_cap, &why) < 0) {
                fprintf(stderr, "block %zu: %s\n", k, why);
                exit(1);
            }
        }
        t[run] = now() - t0;
    }
    free(st);
    free(items);
}

static int phase_main(int decode, size_t n, int runs)
{
    tf_event *ev = malloc(n * sizeof *ev);
    uint32_t native_ids[NSTACKS], py_ids[NPYSTACKS];
    tf_writer *w = new_writer(native_ids, py_ids);
    n = make_loop_stream(ev, n, native_ids, py_ids);
    size_t nchunks = 0, cap = 64;
    tf_chunk *chunks = calloc(cap, sizeof *chunks);
    for (size_t i = 0; i <= n; i++) {
        if (i < n)
            tf_write_event(w, &ev[i]);
        if (i == n || tf_writer_pending(w) >= CHUNK_SEAL) {
            if (nchunks == cap)
                chunks = realloc(chunks, (cap *= 2) * sizeof *chunks);
            chunks[nchunks] = (tf_chunk){ 0 };
            tf_writer_seal(w, &chunks[nchunks++]);
        }
    }
    tf_writer_free(w);
    /* Each chunk's block payload (after the COLUMNS record's kind and length). */
    tf_colenc *enc = tf_colenc_new();
    uint8_t **blocks = calloc(nchunks, sizeof *blocks);
    size_t *blen = calloc(nchunks, sizeof *blen);
    uint64_t hash = 0xcbf29ce484222325ull;   /* FNV-1a of the verdicts and blocks */
    for (size_t k = 0; k < nchunks; k++) {
        int rc = tf_columns_encode(enc, chunks[k].data, chunks[k].len, 1000);
        hash = (hash ^ (uint64_t)(rc + 2)) * 0x100000001b3ull;
        if (rc != 0)
            continue;
        const void *piece[TF_COLUMNS + 1];
        size_t plen[TF_COLUMNS + 1], len = 0;
        int np = tf_colenc_pieces(enc, piece, plen);
        uint8_t *b = malloc(tf_colenc_size(enc));
        for (int i = 0; i < np; i++) {
            memcpy(b + len, piece[i], plen[i]);
            len += plen[i];
        }
        for (size_t i = 0; i < len; i++)
            hash = (hash ^ b[i]) * 0x100000001b3ull;
        tf_cursor c = { b, b + len, 0 };
        tf_get_uv(&c);
        blen[k] = (size_t)tf_get_uv(&c);
        blocks[k] = b;
        memmove(b, c.p, blen[k]);
    }
    double t[64], best = 1e30;
    runs = runs < 1 ? 1 : runs > 64 ? 64 : runs;
    phase_loop(decode, chunks, nchunks, blocks, blen, enc, runs, t);
    for (int run = 0; run < runs; run++)
        best = t[run] < best ? t[run] : best;
    printf("column %s %.1f ns/event (%zu events, %zu chunks, best of %d, CPU time)\n",
           decode ? "decoding" : "encoding", best / n * 1e9, n, nchunks, runs);
    /* The same stream makes the same blocks, whatever the encoder's speed:
     * compare this line across builds. */
    printf("blocks FNV-1a %016llx\n", (unsigned long long)hash);
    for (size_t k = 0; k < nchunks; k++) {
        tf_chunk_free(&chunks[k]);
        free(blocks[k]);
    }
    free(chunks);
    free(blocks);
    free(blen);
    tf_colenc_free(enc);
    free(ev);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "encode") || !strcmp(argv[1], "decode")))
        return phase_main(argv[1][0] == 'd', argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000,
                          argc > 3 ? atoi(argv[3]) : 5);
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 4000000;
    int level = argc > 2 ? atoi(argv[2]) : 1;
    int runs = 3;
    tf_event *ev = malloc(n * sizeof *ev);
    uint32_t native_ids[NSTACKS], py_ids[NPYSTACKS];
    tf_writer_free(new_writer(native_ids, py_ids));
    n = make_loop_stream(ev, n, native_ids, py_ids);

    /* [0]: column blocks (the recorder's default, TRACE_COLUMNS=1), [1]: records */
    tf_colenc *enc = tf_colenc_new();
    double best_write[2] = { 1e30, 1e30 }, best_read[2] = { 1e30, 1e30 }, best_encode = 1e30;
    off_t bytes[2] = { 0, 0 };
    for (int i = 0; i < runs; i++) {  /* best of three: the machine may be shared */
        for (int m = 0; m < 2; m++) {
            int fd;
            double t = write_run(ev, n, level, m ? NULL : enc, &fd);
            best_write[m] = t < best_write[m] ? t : best_write[m];
            bytes[m] = lseek(fd, 0, SEEK_END);
            t = read_run(fd, n);
            best_read[m] = t < best_read[m] ? t : best_read[m];
            close(fd);
        }
        double t = encode_run(ev, n);
        best_encode = t < best_encode ? t : best_encode;
    }
    phases ph = phase_run(ev, n, level, enc);
    tf_colenc_free(enc);
    printf("events      %zu, zstd level %d, best of %d runs, CPU time\n", n, level, runs);
    printf("writer      %.1f M events/s (encode + column blocks + compress + write; the default)\n",
           n / best_write[0] / 1e6);
    printf("  encoding  %.1f ns/event of that (under the recorder's lock)\n",
           best_encode / n * 1e9);
    printf("  blocks    %.1f ns/event of that (on the flushing thread)\n",
           (best_write[0] - best_write[1]) / n * 1e9);
    printf("  phases    column encoding %.1f, compression %.1f ns/event (each alone)\n",
           ph.colenc, ph.compress);
    printf("reader      %.1f M events/s (decompress + decode blocks + decode)\n", n / best_read[0] / 1e6);
    printf("  phases    decompression %.1f, column decoding %.1f ns/event (each alone)\n",
           ph.decompress, ph.decode);
    printf("size        %.2f bytes/event (%lld bytes)\n", (double)bytes[0] / n, (long long)bytes[0]);
    printf("records (TRACE_COLUMNS=0): writer %.1f M events/s, reader %.1f M events/s, "
           "%.2f bytes/event\n", n / best_write[1] / 1e6, n / best_read[1] / 1e6, (double)bytes[1] / n);
    printf("intern      %.1f ns per %d-frame stack lookup\n", intern_ns(), DEPTH);
    free(ev);
    return 0;
}
