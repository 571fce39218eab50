/*
 * test_block_marks.c - the marks of left-out object blocks
 * (preload/block_marks.c): a mark is found again and nowhere else, cleared
 * exactly, refused (and then never found) where it cannot be exact, and
 * kept bit for bit when threads mark neighbours in the same words at once.
 */
#include "block_marks.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

/* host_blocks.h's guard, which the module raises around its own mmap. */
__thread int host_guard __attribute__((tls_model("initial-exec")));

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; fprintf(stderr, "FAIL %s:%d: ", \
    __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static const void *at(uintptr_t a)
{
    return (const void *)a;
}

/* Addresses in different MiBs and 4 GiB regions, at the edges of words,
 * leaves and tables. */
static void marks_and_neighbours(void)
{
    static const uintptr_t addrs[] = {
        0x10000, 0x10010, 0x103f0, 0x10400, 0xfffff0, 0x1000000, 0x55d0c8a01230,
        0x7f3a12000000, 0x7f3a120ffff0, 0x7f3a12100000, 0xfffffffffff0,
    };
    const unsigned n = sizeof addrs / sizeof addrs[0];
    for (unsigned i = 0; i < n; i++)
        CHECK(!block_marks_test(at(addrs[i])), "%#lx marked before any mark", (unsigned long)addrs[i]);
    for (unsigned i = 0; i < n; i += 2)
        CHECK(block_marks_set(at(addrs[i])), "%#lx not marked", (unsigned long)addrs[i]);
    for (unsigned i = 0; i < n; i++) {
        CHECK(block_marks_test(at(addrs[i])) == !(i & 1), "%#lx: test %d, expected %d", (unsigned long)addrs[i],
              block_marks_test(at(addrs[i])), !(i & 1));
        /* the 8 and 16 bytes around it are other blocks' */
        CHECK(!block_marks_test(at(addrs[i] + 8)), "%#lx + 8 marked", (unsigned long)addrs[i]);
        CHECK(!block_marks_test(at(addrs[i] + 16)) || (i + 1 < n && addrs[i] + 16 == addrs[i + 1] && !(i & 1)),
              "%#lx + 16 marked", (unsigned long)addrs[i]);
        if (addrs[i] >= 16) {
            CHECK(!block_marks_test(at(addrs[i] - 8)), "%#lx - 8 marked", (unsigned long)addrs[i]);
            CHECK(!block_marks_test(at(addrs[i] - 16)) || (i > 0 && addrs[i] - 16 == addrs[i - 1] && (i & 1)),
                  "%#lx - 16 marked", (unsigned long)addrs[i]);
        }
    }
    CHECK(block_marks_set(at(addrs[0])), "a second mark of the same block");
    for (unsigned i = 0; i < n; i++)
        block_marks_clear(at(addrs[i]));
    for (unsigned i = 0; i < n; i++)
        CHECK(!block_marks_test(at(addrs[i])), "%#lx still marked after its clear", (unsigned long)addrs[i]);
}

/* One mark, and every block within 4 KiB of it (its word's, the words
 * around) unmarked. */
static void lone(void)
{
    const uintptr_t m = 0x300000 + 37 * 16;
    CHECK(block_marks_set(at(m)), "%#lx not marked", (unsigned long)m);
    int found = 0;
    for (uintptr_t a = m - 4096; a <= m + 4096; a += 8)
        if (block_marks_test(at(a)) && a != m) {
            CHECK(0, "%#lx marked, only %#lx was", (unsigned long)a, (unsigned long)m);
            if (++found > 3)
                break;
        }
    block_marks_clear(at(m));
    CHECK(!block_marks_test(at(m)), "%#lx still marked", (unsigned long)m);
}

/* What cannot have an exact bit is refused, and its test and clear touch
 * nothing (the aligned block beside it keeps its mark). */
static void refused(void)
{
    CHECK(block_marks_set(at(0x20000)), "0x20000 not marked");
    CHECK(!block_marks_set(at(0x20004)), "an address not 8-aligned was marked");
    CHECK(!block_marks_test(at(0x20004)), "an address not 8-aligned tests marked");
    block_marks_clear(at(0x20004));
    CHECK(block_marks_test(at(0x20000)), "a clear of 0x20004 cleared 0x20000");
    /* 8-byte blocks side by side (another malloc's smallest class): each
     * its own bit */
    CHECK(block_marks_set(at(0x20008)), "0x20008 (8-aligned) not marked");
    block_marks_clear(at(0x20000));
    CHECK(!block_marks_test(at(0x20000)) && block_marks_test(at(0x20008)), "8-byte neighbours share a bit");
    block_marks_clear(at(0x20008));
    CHECK(!block_marks_set(at((uintptr_t)1 << 48)), "an address at 2^48 was marked");
    CHECK(!block_marks_test(at(((uintptr_t)1 << 48) | 0x20000)), "an address above 2^48 aliases one below");
    /* Each bit of the one mask test (block_marks_find) alone, and a clear
     * of such an address beside a mark leaves the mark alone. */
    CHECK(block_marks_set(at(0x20000)), "0x20000 not marked");
    for (int b = 0; b < 64; b++) {
        if (b >= 3 && b < 48)
            continue;
        uintptr_t a = ((uintptr_t)1 << b) | 0x20000;
        CHECK(!block_marks_test(at(a)), "%#lx (bit %d) tests marked", (unsigned long)a, b);
        block_marks_clear(at(a));
        CHECK(!block_marks_set(at(a)), "%#lx (bit %d) was marked", (unsigned long)a, b);
    }
    CHECK(!block_marks_test(at(~(uintptr_t)7)), "the top 8-aligned address tests marked");
    CHECK(block_marks_test(at(0x20000)), "a clear above 2^48 or unaligned cleared 0x20000");
    block_marks_clear(at(0x20000));
}

/* Two threads marking and clearing alternate blocks of the same words:
 * each must find its own marks exactly as it left them. */
#define SPAN 4096u
static void *neighbour(void *arg)
{
    uintptr_t base = 0x7f0000000000 + (uintptr_t)arg * 16;
    for (int round = 0; round < 50; round++) {
        for (unsigned i = 0; i < SPAN; i++)
            if (!block_marks_set(at(base + 32 * i)))
                return (void *)1;
        for (unsigned i = 0; i < SPAN; i += 2)
            block_marks_clear(at(base + 32 * i));
        for (unsigned i = 0; i < SPAN; i++)
            if (block_marks_test(at(base + 32 * i)) != (int)(i & 1))
                return (void *)1;
        for (unsigned i = 1; i < SPAN; i += 2)
            block_marks_clear(at(base + 32 * i));
    }
    return NULL;
}

static void threads(void)
{
    pthread_t t[2];
    void *r[2] = { 0, 0 };
    for (uintptr_t i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, neighbour, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], &r[i]);
    CHECK(!r[0] && !r[1], "a thread found a neighbour's mark or lost its own (%p, %p)", r[0], r[1]);
}

int main(void)
{
    marks_and_neighbours();
    lone();
    refused();
    threads();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("block marks: all checks passed\n");
    return 0;
}
