/*
 * test_no_alloc.c - once warm, the writer's hot path allocates nothing:
 * events, look-ups of stacks and strings already interned, and seals that
 * swap buffers with the caller.  Linked with --wrap so every malloc, calloc
 * and realloc made by the writer passes through a counter.
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

/* What the recorder does per event: intern its stack, encode, seal when due. */
static void write_some(tf_writer *w, tf_chunk *chunk, uint64_t *seq, uint64_t *rng,
                       const uint64_t (*stacks)[32], int n)
{
    for (int i = 0; i < n; i++) {
        tf_event e;
        tf_test_random_event(rng, ++*seq, &e);
        e.native_stack = tf_write_native_stack(w, stacks[i % 8], 32);
        e.u.mark.text = tf_write_string(w, "steady", 6);
        tf_write_event(w, &e);
        if (tf_writer_pending(w) >= SEAL_AT)
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
    /* Warm up: the intern tables learn the stacks, and two seals leave one
     * buffer with the writer and one with us. */
    write_some(w, &chunk, &seq, &rng, stacks, 20000);
    tf_writer_seal(w, &chunk);
    write_some(w, &chunk, &seq, &rng, stacks, 100);
    tf_writer_seal(w, &chunk);

    long before = allocations;
    CHECK(before > 0);  /* the counter sees the writer's allocations */
    write_some(w, &chunk, &seq, &rng, stacks, 200000);
    CHECK(allocations == before);
    if (allocations != before)
        fprintf(stderr, "%ld allocations in the steady state\n", allocations - before);
    CHECK(seq == 20100 + 200000);
    tf_writer_free(w);
    free(chunk.data);
    return tf_test_done("no_alloc");
}
