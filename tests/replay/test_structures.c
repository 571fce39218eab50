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

/* rp_rangeset_put against a plain list: which ranges it stops at or
 * removes, in which order, and what the set holds after.  Ranges with an
 * odd val stop a put that asks to stop (as live blocks stop a claim);
 * sizes from one unit to a quarter of the space, so that a put often
 * covers ranges across several chunks. */
#define PN 2048
static struct { uint64_t start, end, val; } plist[PN];
static int pn;
static uint64_t gone_seen[PN];
static int ngone;

static int odd_val(const rp_range *r, void *arg)
{
    (void)arg;
    return (int)(r->val & 1);
}

static void note_gone(const rp_range *r, void *arg)
{
    (void)arg;
    if (ngone < PN)
        gone_seen[ngone++] = r->start;
}

static int list_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return *x < *y ? -1 : *x > *y;
}

static int compare_walk(const rp_range *r, void *arg)
{
    int *i = arg;
    CHECK(*i < pn && plist[*i].start == r->start && plist[*i].end == r->end && plist[*i].val == r->val);
    (*i)++;
    return 0;
}

static void rangeset_put(void)
{
    rp_rangeset s;
    rp_rangeset_init(&s);
    pn = 0;
    for (int step = 0; step < 100000; step++) {
        uint64_t space = 1 << 16, unit = 16;
        uint64_t start = rnd() % space, len = rnd() % 8 ? unit * (1 + rnd() % 8) : 1 + rnd() % (space / 4);
        uint64_t end = start + len, val = rnd() % 1000 == 0 ? 1 : 2 * (uint64_t)step;
        int stop = (int)(rnd() % 2);
        if (rnd() % 5 == 0 && pn) {
            /* An erase now and then, so chunks also shrink and merge. */
            int i = (int)(rnd() % (uint64_t)pn);
            rp_range out;
            CHECK(rp_rangeset_erase(&s, plist[i].start, &out) && out.end == plist[i].end);
            plist[i] = plist[--pn];
            qsort(plist, (size_t)pn, sizeof plist[0], list_cmp);
            continue;
        }
        /* The list's answer: the ranges in the way, in address order. */
        int first = -1, nway = 0, stopper = -1;
        for (int i = 0; i < pn; i++)
            if (plist[i].start < end && start < plist[i].end) {
                if (first < 0)
                    first = i;
                nway++;
                if (stopper < 0 && (plist[i].val & 1))
                    stopper = i;
            }
        if (pn + 1 - nway > PN)
            continue;
        rp_rangeset_pos pos;
        rp_range *b = rp_rangeset_before_pos(&s, end - 1, start, &pos), clash;
        int want_b = -1;
        for (int i = 0; i < pn; i++)
            if (plist[i].start <= end - 1)
                want_b = i;
        CHECK(want_b < 0 ? !b : b && b->start == plist[want_b].start);
        ngone = 0;
        int got = rp_rangeset_put(&s, &pos, start, end, val, 0, stop ? odd_val : NULL, note_gone, NULL, &clash);
        if (stop && stopper >= 0) {
            CHECK(!got && clash.start == plist[stopper].start && ngone == 0);
        } else {
            CHECK(got && ngone == nway);
            for (int i = 0; i < nway && i < ngone; i++)
                CHECK(gone_seen[i] == plist[first + i].start);
            memmove(&plist[first < 0 ? 0 : first], &plist[first < 0 ? 0 : first + nway],
                    (size_t)(pn - (first < 0 ? 0 : first + nway)) * sizeof plist[0]);
            pn -= nway;
            plist[pn].start = start;
            plist[pn].end = end;
            plist[pn].val = val;
            pn++;
            qsort(plist, (size_t)pn, sizeof plist[0], list_cmp);
        }
        uint64_t bytes = 0;
        for (int i = 0; i < pn; i++)
            bytes += plist[i].end - plist[i].start;
        CHECK(s.len == (size_t)pn && s.bytes == bytes);
        if (step % 97 == 0) {
            int i = 0;
            rp_rangeset_walk(&s, compare_walk, &i);
            CHECK(i == pn);
        }
        /* A look-up near a start the set holds (a free, an address handed
         * out again): the remembered position must give what a search
         * gives, wherever the ranges have moved since. */
        if (pn) {
            uint64_t near = plist[rnd() % (uint64_t)pn].start, key = near + rnd() % 256;
            rp_rangeset_pos npos;
            const rp_range *nb = rp_rangeset_before_pos(&s, key, near, &npos);
            int want_n = -1;
            for (int i = 0; i < pn; i++)
                if (plist[i].start <= key)
                    want_n = i;
            CHECK(want_n >= 0 && nb && nb->start == plist[want_n].start);
            CHECK(rp_rangeset_before(&s, near) && rp_rangeset_before(&s, near)->start == near);
        }
        /* A look-up at a random point agrees too. */
        uint64_t probe = rnd() % space;
        const rp_range *f = rp_rangeset_find(&s, probe);
        int want_f = -1;
        for (int i = 0; i < pn; i++)
            if (plist[i].start <= probe && probe < plist[i].end)
                want_f = i;
        CHECK(want_f < 0 ? !f : f && f->start == plist[want_f].start);
    }
    rp_rangeset_free(&s);
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

/* rp_ptrmap_put_many against the same puts made one by one: batches small
 * and large (the large ones sort into more buckets), keys repeated within
 * a batch (the later put wins) and across batches. */
static void ptrmap_put_many(void)
{
    enum { MAXN = 40000 };
    static rp_ptrmap_slot kv[MAXN], scratch[MAXN];
    rp_ptrmap many, one;
    rp_ptrmap_init(&many);
    rp_ptrmap_init(&one);
    for (int round = 0; round < 12; round++) {
        size_t n = round % 3 == 0 ? MAXN : round % 3 == 1 ? 100 : 5000;
        for (size_t i = 0; i < n; i++) {
            uint64_t k = rnd() % 60000;
            kv[i].key = k == 59999 ? UINT64_MAX : k << 9;
            kv[i].val = (uint64_t)round << 32 | i;
            rp_ptrmap_put(&one, kv[i].key, kv[i].val);
        }
        rp_ptrmap_put_many(&many, kv, n, scratch);
        CHECK(many.len == one.len);
        for (uint64_t k = 0; k < 60000; k++) {
            uint64_t key = k == 59999 ? UINT64_MAX : k << 9;
            const uint64_t *a = rp_ptrmap_get(&many, key), *b = rp_ptrmap_get(&one, key);
            CHECK(a ? b && *a == *b : !b);
        }
    }
    rp_ptrmap_free(&many);
    rp_ptrmap_free(&one);
}

int main(void)
{
    rangeset();
    rangeset_put();
    ptrmap();
    ptrmap_put_many();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures != 0;
}
