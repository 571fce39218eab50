/* test_structures.c - the interval set and the pointer map against brute
 * force, on random operations (a fixed seed: the same run every time). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptrmap.h"
#include "rangeset.h"

static int failures;
#define CHECK(cond)                                                                                                \
    do {                                                                                                           \
        if (!(cond) && failures++ < 10)                                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                              \
    } while (0)

static uint64_t rng = 1;
static uint64_t rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng >> 33;
}

#define N 512
static struct { uint64_t start, end; int live; } brute[N];

static int brute_overlap(uint64_t s, uint64_t e)
{
    for (int i = 0; i < N; i++)
        if (brute[i].live && brute[i].start < e && s < brute[i].end)
            return i;
    return -1;
}

static int walk_count(const rp_range *r, void *arg)
{
    uint64_t *prev = arg;
    CHECK(r->start >= prev[0]);  /* address order */
    prev[0] = r->end;
    prev[1]++;
    return 0;
}

static void rangeset(void)
{
    rp_rangeset s, copy;
    rp_rangeset_init(&s);
    rp_rangeset_init(&copy);
    for (int step = 0; step < 200000; step++) {
        int slot = (int)(rnd() % N);
        uint64_t start = (rnd() % 4096) * 64, end = start + 64 * (1 + rnd() % 8);
        if (!brute[slot].live) {
            rp_range clash;
            int want = brute_overlap(start, end);
            int got = rp_rangeset_insert_new(&s, start, end, (uint64_t)slot, 0, &clash);
            CHECK(got == (want < 0));
            if (got) {
                brute[slot].start = start;
                brute[slot].end = end;
                brute[slot].live = 1;
            } else {
                CHECK(clash.start < end && start < clash.end);
            }
        } else {
            rp_range out;
            CHECK(rp_rangeset_erase(&s, brute[slot].start, &out) && out.val == (uint64_t)slot);
            brute[slot].live = 0;
        }
        uint64_t probe = (rnd() % 4096) * 64 + rnd() % 64;
        const rp_range *f = rp_rangeset_find(&s, probe);
        int b = brute_overlap(probe, probe + 1);
        CHECK((f != NULL) == (b >= 0) && (!f || f->val == (uint64_t)b));
        const rp_range *o = rp_rangeset_overlap(&s, start, end);
        CHECK((o != NULL) == (brute_overlap(start, end) >= 0));
        if (step % 50000 == 0) {
            rp_rangeset_copy(&copy, &s);
            uint64_t acc[2] = {0, 0};
            rp_rangeset_walk(&copy, walk_count, acc);
            CHECK(acc[1] == s.len);
        }
    }
    rp_rangeset_free(&s);
    rp_rangeset_free(&copy);
}

/* Index k's address; the last is UINT64_MAX, the map's own empty marker,
 * which a corrupt log can name like any other address. */
static uint64_t address_of(uint64_t k)
{
    return k == 4095 ? UINT64_MAX : k << 12;
}

static void ptrmap(void)
{
    rp_ptrmap m, copy;
    rp_ptrmap_init(&m);
    rp_ptrmap_init(&copy);
    static uint64_t vals[4096];
    memset(vals, 0, sizeof vals);
    for (int step = 0; step < 300000; step++) {
        uint64_t k = rnd() % 100 == 0 ? 4095 : rnd() % 4096;
        if (rnd() % 3) {
            rp_ptrmap_put(&m, address_of(k), (uint64_t)step + 1);
            vals[k] = (uint64_t)step + 1;
        } else {
            uint64_t v = 0;
            CHECK(rp_ptrmap_del(&m, address_of(k), &v) == (vals[k] != 0) && v == vals[k]);
            vals[k] = 0;
        }
        uint64_t q = rnd() % 50 == 0 ? 4095 : rnd() % 4096;
        uint64_t *g = rp_ptrmap_get(&m, address_of(q));
        CHECK(vals[q] ? g && *g == vals[q] : !g);
    }
    size_t live = 0;
    for (int i = 0; i < 4096; i++)
        live += vals[i] != 0;
    CHECK(m.len == live);
    rp_ptrmap_put(&m, UINT64_MAX, 7);
    rp_ptrmap_copy(&copy, &m);
    rp_ptrmap_del(&m, UINT64_MAX, NULL);
    CHECK(!rp_ptrmap_get(&m, UINT64_MAX));
    uint64_t *g = rp_ptrmap_get(&copy, UINT64_MAX);
    CHECK(g && *g == 7 && copy.len == m.len + 1);
    rp_ptrmap_free(&m);
    rp_ptrmap_free(&copy);
}

int main(void)
{
    rangeset();
    ptrmap();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures != 0;
}
