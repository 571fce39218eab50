/*
 * test_no_alloc.c - once created, the writer never calls the allocator: not
 * for events, not for new stacks and strings that grow the intern tables, not
 * when the chunk outgrows its first size, not for seals that swap buffers with
 * the caller.  The recorder may encode from a signal handler that interrupted
 * malloc, so growth must come from mapped pages.  Linked with --wrap so every
 * malloc, calloc and realloc made by the writer passes through a counter.
 */
#include "tf_test.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

static long allocations;

void *__wrap_malloc(size_t n)
{
    allocations++;
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    allocations++;
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    allocations++;
    return __real_realloc(p, n);
}

#define SEAL_AT (256u * 1024)

/* What the recorder does per event: intern its stack, encode, seal when due
 * (never, when chunk is NULL). */
static void write_some(tf_writer *w, tf_chunk *chunk, uint64_t *seq, uint64_t *rng,
                       const uint64_t (*stacks)[32], int n)
{
    for (int i = 0; i < n; i++) {
        tf_event e;
        tf_test_random_event(rng, ++*seq, &e);
        e.native_stack = tf_write_native_stack(w, stacks[i % 8], 32);
        e.u.mark.text = tf_write_string(w, "steady", 6);
        tf_write_event(w, &e);
        if (chunk && tf_writer_pending(w) >= SEAL_AT)
            tf_writer_seal(w, chunk);
    }
}

int main(void)
{
    static uint64_t stacks[8][32];
    for (int s = 0; s < 8; s++)
        for (int f = 0; f < 32; f++)
            stacks[s][f] = 0x400000 + (uint64_t)(s * 4096 + f * 16);
    tf_header h = { .pid = 1 };
    tf_writer *w = tf_writer_new(&h);
    tf_chunk chunk = { 0 };
    uint64_t seq = 0, rng = 5;
    long after_new = allocations;
    CHECK(after_new > 0);  /* the counter sees the writer's own allocation */

    /* Growth: 5,000 new stacks and strings, and 2 MiB of records with no seal,
     * so the intern tables and the chunk all grow several times over. */
    uint64_t big[32];
    char text[32];
    for (int i = 0; i < 5000; i++) {
        for (int f = 0; f < 32; f++)
            big[f] = 0x700000 + (uint64_t)i * 512 + (uint64_t)f * 8;
        int n = snprintf(text, sizeof text, "string %d", i);
        tf_event e;
        tf_test_random_event(&rng, ++seq, &e);
        e.native_stack = tf_write_native_stack(w, big, 32);
        e.u.mark.text = tf_write_string(w, text, (size_t)n);
        tf_write_event(w, &e);
    }
    while (tf_writer_pending(w) < 2u * 1024 * 1024)
        write_some(w, NULL, &seq, &rng, stacks, 1000);
    tf_writer_seal(w, &chunk);

    /* Steady state: seals swap buffers with us. */
    write_some(w, &chunk, &seq, &rng, stacks, 200000);
    CHECK(allocations == after_new);
    if (allocations != after_new)
        fprintf(stderr, "%ld allocations after tf_writer_new\n", allocations - after_new);
    CHECK(seq > 200000);
    tf_writer_free(w);
    tf_chunk_free(&chunk);
    return tf_test_done("no_alloc");
}
