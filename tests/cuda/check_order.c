/*
 * check_order.c - the total-order check over a (large) log: seqs run 1, 2,
 * 3, ... without a gap, every cuda_free of a pointer comes after a
 * cuda_alloc of it, and times never go back in seq order nor precede the
 * header's start (the recorder reads the clock under its lock).  Prints "allocs frees" and exits 1 on the first fault.
 */
#include "trace_format.h"

#include <stdio.h>
#include <stdlib.h>

/* Open addressing over pointers that are live (allocated, not yet freed). */
struct live { uint64_t *slots; size_t cap, count; };

static size_t slot_of(const struct live *l, uint64_t ptr)
{
    size_t i = (size_t)(ptr * 0x9E3779B97F4A7C15ull) & (l->cap - 1);
    while (l->slots[i] && l->slots[i] != ptr)
        i = (i + 1) & (l->cap - 1);
    return i;
}

static void live_add(struct live *l, uint64_t ptr)
{
    l->slots[slot_of(l, ptr)] = ptr;
    l->count++;
}

/* Removal by backward-shift deletion, keeping probe chains whole. */
static int live_remove(struct live *l, uint64_t ptr)
{
    size_t i = slot_of(l, ptr);
    if (!l->slots[i])
        return 0;
    l->slots[i] = 0;
    for (size_t j = (i + 1) & (l->cap - 1); l->slots[j]; j = (j + 1) & (l->cap - 1)) {
        uint64_t moved = l->slots[j];
        l->slots[j] = 0;
        l->slots[slot_of(l, moved)] = moved;
    }
    l->count--;
    return 1;
}

int main(int argc, char **argv)
{
    char err[256];
    tf_reader *r = argc == 2 ? tf_reader_open(argv[1], err, sizeof err) : NULL;
    if (!r) {
        fprintf(stderr, "usage: check_order LOG (%s)\n", argc == 2 ? err : "");
        return 2;
    }
    struct live live = { calloc(1u << 22, sizeof(uint64_t)), 1u << 22, 0 };
    uint64_t expect = 1, allocs = 0, frees = 0;
    uint64_t last_t = tf_reader_header(r)->mono_start_ns;
    tf_event e;
    while (tf_reader_next(r, &e)) {
        if (e.seq != expect) {
            printf("gap: seq %llu after %llu\n", (unsigned long long)e.seq,
                   (unsigned long long)expect - 1);
            return 1;
        }
        if (e.t_ns < last_t) {
            printf("time went back: seq %llu at %llu ns after %llu\n", (unsigned long long)e.seq,
                   (unsigned long long)e.t_ns, (unsigned long long)last_t);
            return 1;
        }
        last_t = e.t_ns;
        expect++;
        if (e.kind == TF_EV_CUDA_ALLOC && e.u.cuda.result == 0) {
            allocs++;
            live_add(&live, e.u.cuda.ptr);
        } else if (e.kind == TF_EV_CUDA_FREE && e.u.cuda.result == 0) {
            frees++;
            if (!live_remove(&live, e.u.cuda.ptr)) {
                printf("free before alloc: seq %llu ptr %llx\n", (unsigned long long)e.seq,
                       (unsigned long long)e.u.cuda.ptr);
                return 1;
            }
        }
    }
    const tf_read_status *s = tf_reader_status(r);
    printf("%llu %llu clean_end=%d truncated=%d corrupt=%llu\n", (unsigned long long)allocs,
           (unsigned long long)frees, s->clean_end, s->truncated,
           (unsigned long long)s->corrupt_frames);
    tf_reader_close(r);
    free(live.slots);
    return 0;
}
