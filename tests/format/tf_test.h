/*
 * tf_test.h - helpers shared by the format tests: checks, a scratch log file,
 * and a generator of arbitrary events.
 */
#ifndef TF_TEST_H
#define TF_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_format.h"

static int tf_test_failures;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            if (++tf_test_failures > 20)                                       \
                exit(1);                                                       \
        }                                                                      \
    } while (0)

static inline int tf_test_done(const char *name)
{
    if (tf_test_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, tf_test_failures);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}

/* A scratch file, unlinked at once: the tests read it back through /proc. */
typedef struct tf_test_file { int fd; char path[64]; } tf_test_file;

static inline tf_test_file tf_test_file_new(void)
{
    tf_test_file f;
    char tmpl[] = "/tmp/tf_test_XXXXXX";
    f.fd = mkstemp(tmpl);
    if (f.fd < 0) {
        perror("mkstemp");
        exit(1);
    }
    unlink(tmpl);
    snprintf(f.path, sizeof f.path, "/proc/self/fd/%d", f.fd);
    return f;
}

/* Seal what the writer holds and append it to fd as one frame. */
static inline void tf_test_flush(tf_writer *w, int fd, tf_chunk *chunk)
{
    tf_writer_seal(w, chunk);
    if (tf_chunk_write(fd, chunk, NULL, 1) != 0) {
        fprintf(stderr, "tf_chunk_write failed\n");
        exit(1);
    }
}

/* Seal what the writer holds, with raw records (bytes[0..n)) after it, and
 * append it to fd as one frame: records no writer call makes (other
 * versions', damaged ones). */
static inline void tf_test_flush_with(tf_writer *w, int fd, tf_chunk *chunk, const uint8_t *bytes,
                                      size_t n)
{
    tf_writer_seal(w, chunk);
    tf_chunk longer = { malloc(chunk->len + n), chunk->len + n, chunk->len + n };
    if (!longer.data) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    memcpy(longer.data, chunk->data, chunk->len);
    memcpy(longer.data + chunk->len, bytes, n);
    if (tf_chunk_write(fd, &longer, NULL, 1) != 0) {
        fprintf(stderr, "tf_chunk_write failed\n");
        exit(1);
    }
    free(longer.data);
}

/* Flush what the writer holds as a last frame, free the writer and the
 * chunk, and open the file for reading (NULL, with a failed check, when it
 * does not open). */
static inline tf_reader *tf_test_close_and_read(tf_writer *w, tf_test_file *f, tf_chunk *chunk)
{
    tf_test_flush(w, f->fd, chunk);
    tf_writer_free(w);
    tf_chunk_free(chunk);
    char err[256];
    tf_reader *r = tf_reader_open(f->path, err, sizeof err);
    CHECK(r != NULL);
    return r;
}

/* The whole file, for tests that damage it in memory. */
static inline uint8_t *tf_test_slurp(int fd, size_t *len)
{
    off_t end = lseek(fd, 0, SEEK_END);
    uint8_t *buf = malloc((size_t)end + 1);
    if (!buf || pread(fd, buf, (size_t)end, 0) != end) {
        perror("read back");
        exit(1);
    }
    *len = (size_t)end;
    return buf;
}

/* xorshift64*: deterministic, so a reader can regenerate what was written. */
static inline uint64_t tf_test_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

/* An arbitrary value: often zero, often small, sometimes anything. */
static inline uint64_t tf_test_value(uint64_t *s)
{
    uint64_t r = tf_test_rand(s);
    switch (r & 3) {
    case 0: return 0;
    case 1: return (r >> 2) & 0xff;
    case 2: return (r >> 2) & 0xffffffffu;
    default: return tf_test_rand(s);
    }
}

static const uint32_t tf_test_kinds[] = {
    TF_EV_CUDA_ALLOC, TF_EV_CUDA_FREE, TF_EV_POOL_ALLOC, TF_EV_POOL_FREE,
    TF_EV_POOL_OP_BEGIN, TF_EV_POOL_OP_END, TF_EV_POOL_SEGMENT, TF_EV_GC_START,
    TF_EV_GC_STOP, TF_EV_HOST_ALLOC, TF_EV_HOST_FREE, TF_EV_PY_DOUBLE_INIT,
    TF_EV_MARK, TF_EV_PY_ALLOC, TF_EV_PY_FREE,
};
#define TF_TEST_NKINDS (sizeof tf_test_kinds / sizeof *tf_test_kinds)

/* A random event of a random kind (END excluded: the writer fills its
 * counts), every field its kind uses set, the rest zero. */
static inline void tf_test_random_event(uint64_t *s, uint64_t seq, tf_event *e)
{
    memset(e, 0, sizeof *e);
    e->kind = tf_test_kinds[tf_test_rand(s) % TF_TEST_NKINDS];
    e->seq = seq;
    e->tid = (uint32_t)tf_test_value(s);
    e->t_ns = tf_test_value(s);
    e->parent = tf_test_value(s);
    e->native_stack = (uint32_t)tf_test_value(s);
    e->py_stack = (uint32_t)tf_test_value(s);
#define V64 tf_test_value(s)
#define V32 (uint32_t) tf_test_value(s)
#define S32 (int32_t) tf_test_value(s)
    switch (e->kind) {
    case TF_EV_CUDA_ALLOC: case TF_EV_CUDA_FREE:
        e->u.cuda.api = V32; e->u.cuda.device = S32; e->u.cuda.result = S32;
        e->u.cuda.flags = V32; e->u.cuda.ptr = V64; e->u.cuda.size = V64;
        e->u.cuda.stream = V64;
        break;
    case TF_EV_POOL_ALLOC: case TF_EV_POOL_FREE:
        e->u.pool.pool = V32; e->u.pool.ptr = V64; e->u.pool.requested = V64;
        e->u.pool.granted = V64; e->u.pool.stream = V64;
        break;
    case TF_EV_POOL_OP_BEGIN: case TF_EV_POOL_OP_END:
        e->u.pool_op.pool = V32; e->u.pool_op.op = V32; e->u.pool_op.begin = V64;
        e->u.pool_op.arg = V64;
        break;
    case TF_EV_POOL_SEGMENT:
        e->u.segment.pool = V32; e->u.segment.grow = V32; e->u.segment.ptr = V64;
        e->u.segment.size = V64;
        break;
    case TF_EV_GC_START: case TF_EV_GC_STOP:
        e->u.gc.generation = S32; e->u.gc.collected = V64; e->u.gc.uncollectable = V64;
        e->u.gc.duration_ns = V64;
        for (int i = 0; i < 3; i++)
            e->u.gc.allocs[i] = V64;
        break;
    case TF_EV_HOST_ALLOC: case TF_EV_HOST_FREE: case TF_EV_PY_ALLOC:
        e->u.host.domain = V32; e->u.host.ptr = V64; e->u.host.size = V64;
        break;
    case TF_EV_PY_FREE:
        e->u.host.domain = V32; e->u.host.ptr = V64;
        break;
    case TF_EV_PY_DOUBLE_INIT:
        e->u.double_init.obj = V64; e->u.double_init.type_name = V32;
        break;
    default:
        e->u.mark.text = V32;
        break;
    }
#undef V64
#undef V32
#undef S32
}

#endif
