/*
 * prog_churn.c - a CUDA program for the follower's tests: it allocates and
 * frees device memory through the runtime (the test doubles), a few blocks
 * live at a time, with a mark every iteration.
 *
 *     prog_churn ITERATIONS [--double-free-at K]... [--sleep-us N] [--wait-file PATH]
 *                [--free-again K J] [--wait-checkpoints STEM] [--open-op-from K]
 *                [--thread-every N] [--dlopen PATH] [--unique-marks 1]
 *
 * ITERATIONS 0: until killed.  --double-free-at K (repeatable): at
 * iteration K it frees again the block it freed just before (a double free
 * the doubles accept, as a real runtime may not notice), marks "double
 * free", and goes on.  --wait-file PATH: after the i-th double free it
 * waits until PATH-i exists (i from 1: a test lets it go on once the
 * follower has reported that violation).  --sleep-us N: a pause after each iteration.
 * --free-again K J: at iteration K it frees again the block it allocated at
 * iteration J (freed 16 iterations later; the doubles never hand an address
 * out twice): a double free whose first free may be in a segment deleted
 * since.  --wait-checkpoints STEM: the log is STEM.tlog kept within a
 * budget, and a follower writes checkpoints beside its segments (one for
 * each, before its first event, deleting the older ones); every 500
 * iterations, once segment k >= 2 exists, it waits (at most 120 s) for a
 * checkpoint of segment k - 1 or k (STEM.seg<j>.tlog.ckpt): the follower
 * has opened segment k - 1, and the recorder, which at a small budget keeps
 * no more than the segment it writes and the one before, deletes no
 * segment the follower has not opened before the next wait (500 iterations
 * are less than a segment), so the follower never falls so far behind that
 * a segment is deleted before it read it.
 * --open-op-from K: at iteration K a pool operation begins (pool "churn")
 * that ends only after the last iteration: every later call is nested in
 * it, so a follower with a pool model is gathering it across every later
 * segment (its checkpoints must not wait for the operation to end).
 * It prints "done N" at the end.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace_api.h"

#define LIVE 16
#define MAX_POINTS 8

/* --thread-every: a short-lived thread with a name of its own. */
static void *short_lived(void *arg)
{
    char name[16];
    snprintf(name, sizeof name, "churn-%ld", (long)(intptr_t)arg % 100000000);
    pthread_setname_np(pthread_self(), name);
    void *p;
    if (cudaMalloc(&p, 256) == cudaSuccess)
        cudaFree(p);
    trace_mark(name);
    return NULL;
}

/* --wait-checkpoints: the newest segment k on disk, and when k >= 2, the
 * checkpoint of segment k - 1 or k. */
static int wait_checkpoint(const char *stem)
{
    /* Segments only come newer; the oldest go: look a few past the newest
     * seen (fewer than that are made between two calls). */
    static long newest = 0;
    char path[4096];
    for (long k = newest + 1; k <= newest + 16; k++) {
        snprintf(path, sizeof path, "%s.seg%ld.tlog", stem, k);
        if (access(path, F_OK) == 0)
            newest = k;
    }
    if (newest < 2)
        return 0;
    for (int i = 0; i < 120000; i++) {
        for (long k = newest - 1; k <= newest; k++) {
            snprintf(path, sizeof path, "%s.seg%ld.tlog.ckpt", stem, k);
            if (access(path, F_OK) == 0)
                return 0;
        }
        usleep(1000);
    }
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: prog_churn ITERATIONS [--double-free-at K]... [--sleep-us N] [--wait-file PATH]\n");
        return 2;
    }
    long iterations = atol(argv[1]), points[MAX_POINTS], sleep_us = 0, again_at = 0, again_of = 0, op_from = 0, thread_every = 0;
    int npoints = 0, unique_marks = 0;
    const char *wait_file = NULL, *stem = NULL, *reload = NULL;
    void *kept = NULL;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--free-again") && i + 2 < argc) {
            again_at = atol(argv[i + 1]);
            again_of = atol(argv[i + 2]);
            i++;
        } else if (!strcmp(argv[i], "--wait-checkpoints"))
            stem = argv[i + 1];
        else if (!strcmp(argv[i], "--double-free-at") && npoints < MAX_POINTS)
            points[npoints++] = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--sleep-us"))
            sleep_us = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--wait-file"))
            wait_file = argv[i + 1];
        else if (!strcmp(argv[i], "--open-op-from"))
            op_from = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--thread-every"))
            thread_every = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--dlopen"))
            reload = argv[i + 1];
        else if (!strcmp(argv[i], "--unique-marks"))
            unique_marks = atoi(argv[i + 1]);
    }
    int pool = 0;
    uint64_t op = 0;
    void *live[LIVE] = {0}, *last_freed = NULL;
    int freed_twice = 0;
    char go[4096];
    for (long it = 1; !iterations || it <= iterations; it++) {
        if (it == op_from) {
            pool = trace_pool_register("churn");
            op = trace_pool_op_begin(pool, TRACE_POOL_OP_ALLOC, 4096);
        }
        int slot = (int)(it % LIVE);
        if (live[slot]) {
            cudaFree(live[slot]);
            last_freed = live[slot];
        }
        cudaMalloc(&live[slot], (size_t)(512 + (it * 7919) % 65536));
        if (it == again_of)
            kept = live[slot];
        if (it == again_at && kept) {
            trace_mark("free again");
            cudaFree(kept);
        }
        if (stem && it % 500 == 0 && wait_checkpoint(stem) < 0) {
            fprintf(stderr, "prog_churn: no checkpoint came in 120 s\n");
            return 1;
        }
        for (int p = 0; p < npoints; p++)
            if (it == points[p] && last_freed) {
                trace_mark("double free");
                cudaFree(last_freed);
                snprintf(go, sizeof go, "%s-%d", wait_file ? wait_file : "", ++freed_twice);
                for (; wait_file && access(go, F_OK) != 0; usleep(1000))
                    ;
            }
        if (thread_every && it % thread_every == 0) {
            pthread_t t;
            if (pthread_create(&t, NULL, short_lived, (void *)(intptr_t)it) == 0)
                pthread_join(t, NULL);
        }
        if (reload) {
            void *h = dlopen(reload, RTLD_NOW | RTLD_LOCAL);
            if (!h) {
                fprintf(stderr, "prog_churn: %s\n", dlerror());
                return 1;
            }
            dlclose(h);
        }
        if (unique_marks) {
            char text[64];
            snprintf(text, sizeof text, "iteration %ld, a text of its own", it);
            trace_mark(text);
        } else
            trace_mark("iteration");
        if (sleep_us)
            usleep((useconds_t)sleep_us);
    }
    if (op)
        trace_pool_op_end(pool, op);
    for (int i = 0; i < LIVE; i++)
        if (live[i])
            cudaFree(live[i]);
    printf("done %ld\n", iterations);
    return 0;
}
