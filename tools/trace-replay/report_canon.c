/*
 * report_canon.c - ids of a log's interned content, one per content (see
 * report_canon.h for why).
 *
 * Each kind keeps two maps: id -> canonical id (every id looked up once),
 * and content hash -> the first id with that content, probed past other
 * contents with the same hash.  A content's hash and comparison are
 * computed only the first time an id is met.
 */
#include "report_canon.h"

#include <string.h>

/* Deeper native stacks than the recorder keeps (TRACE_STACK_DEPTH up to
 * 256) are compared frame by frame as they are, not as places. */
#define PLACE_FRAMES 256

uint64_t rpt_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

uint64_t *rpt_index_slot(rp_ptrmap *m, uint64_t h, int (*same)(const void *ctx, uint64_t idx), const void *ctx,
                         uint64_t *key)
{
    for (;; h++) {
        uint64_t *v = rp_ptrmap_get(m, h);
        *key = h;
        if (!v || same(ctx, *v))
            return v;
    }
}

void rpt_canon_init(rpt_canon *c, const tf_reader *rd, rn_stacks *stacks)
{
    memset(c, 0, sizeof *c);
    c->rd = rd;
    c->stacks = stacks;
    rp_ptrmap *maps[] = { &c->code, &c->code_by_content, &c->string, &c->string_by_content, &c->py_stack,
                          &c->py_by_content, &c->native, &c->native_by_content, &c->place, &c->place_by_content };
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++)
        rp_ptrmap_init(maps[i]);
}

void rpt_canon_free(rpt_canon *c)
{
    rp_ptrmap *maps[] = { &c->code, &c->code_by_content, &c->string, &c->string_by_content, &c->py_stack,
                          &c->py_by_content, &c->native, &c->native_by_content, &c->place, &c->place_by_content };
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++)
        rp_ptrmap_free(maps[i]);
}

/* id's canonical id: known, or the first id whose content same() matches
 * under hash h (has: the content is defined), which id becomes if none. */
static uint32_t canon_of(rp_ptrmap *ids, rp_ptrmap *by_content, uint32_t id, int has, uint64_t h,
                         int (*same)(const void *ctx, uint64_t idx), const void *ctx)
{
    uint32_t canon = id;
    if (has) {
        uint64_t key, *first = rpt_index_slot(by_content, h, same, ctx, &key);
        if (first)
            canon = (uint32_t)*first;
        else
            rp_ptrmap_put(by_content, key, id);
    }
    rp_ptrmap_put(ids, id, canon);
    return canon;
}

/* ------------------------------------------------------------ code, text */

static uint64_t mix_text(uint64_t h, const char *s, size_t n)
{
    h = rpt_mix(h, n);
    for (size_t i = 0; s && i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
    return rpt_mix(h, 0);
}

static int same_text(const tf_reader *rd, uint32_t a, uint32_t b)
{
    size_t na, nb;
    const char *x = tf_reader_string(rd, a, &na), *y = tf_reader_string(rd, b, &nb);
    return x && y ? na == nb && !memcmp(x, y, na) : x == y && a == b;
}

struct code_ctx { const tf_reader *rd; const tf_py_code *c; };

static int same_code(const void *ctx, uint64_t id)
{
    const struct code_ctx *k = ctx;
    const tf_py_code *o = tf_reader_py_code(k->rd, (uint32_t)id);
    return o && o->first_line == k->c->first_line && same_text(k->rd, o->file, k->c->file) &&
           same_text(k->rd, o->function, k->c->function);
}

/* Keyed by id, one line of the program was a site per segment, each with
 * part of its count (a budgeted run's top sites listed one line five
 * times). */
uint32_t rpt_canon_code(rpt_canon *c, uint32_t code)
{
    if (!code)
        return 0;
    uint64_t *known = rp_ptrmap_get(&c->code, code);
    if (known)
        return (uint32_t)*known;
    const tf_py_code *pc = tf_reader_py_code(c->rd, code);
    uint64_t h = 0;
    if (pc) {
        size_t nf, nn;
        const char *file = tf_reader_string(c->rd, pc->file, &nf);
        const char *function = tf_reader_string(c->rd, pc->function, &nn);
        h = rpt_mix(mix_text(mix_text(1, file, nf), function, nn), pc->first_line);
    }
    struct code_ctx ctx = { c->rd, pc };
    return canon_of(&c->code, &c->code_by_content, code, pc != NULL, h, same_code, &ctx);
}

struct string_ctx { const tf_reader *rd; uint32_t id; };

static int same_string(const void *ctx, uint64_t id)
{
    const struct string_ctx *k = ctx;
    return same_text(k->rd, (uint32_t)id, k->id);
}

/* Keyed by id, numpy's _array_converter, double-initialised all through a
 * pandas test run with every allocation recorded, was counted as two
 * types. */
uint32_t rpt_canon_string(rpt_canon *c, uint32_t id)
{
    if (!id)
        return 0;
    uint64_t *known = rp_ptrmap_get(&c->string, id);
    if (known)
        return (uint32_t)*known;
    size_t n;
    const char *text = tf_reader_string(c->rd, id, &n);
    struct string_ctx ctx = { c->rd, id };
    return canon_of(&c->string, &c->string_by_content, id, text != NULL, text ? mix_text(3, text, n) : 0,
                    same_string, &ctx);
}

/* ------------------------------------------------------------ Python stacks */

struct py_ctx { rpt_canon *c; uint32_t id; };

static int same_py(const void *ctx, uint64_t other)
{
    const struct py_ctx *k = ctx;
    tf_py_walk a, b;
    uint32_t na, nb;
    if (!tf_reader_py_walk(k->c->rd, k->id, &a, &na) || !tf_reader_py_walk(k->c->rd, (uint32_t)other, &b, &nb) ||
        na != nb)
        return 0;
    tf_py_frame fa, fb;
    while (tf_py_walk_next(&a, &fa)) {
        if (!tf_py_walk_next(&b, &fb) || fa.line != fb.line ||
            rpt_canon_code(k->c, fa.code) != rpt_canon_code(k->c, fb.code))
            return 0;
    }
    return !tf_py_walk_next(&b, &fb);
}

uint32_t rpt_canon_py_stack(rpt_canon *c, uint32_t id)
{
    if (!id)
        return 0;
    uint64_t *known = rp_ptrmap_get(&c->py_stack, id);
    if (known)
        return (uint32_t)*known;
    tf_py_walk w;
    uint32_t n = 0;
    int has = tf_reader_py_walk(c->rd, id, &w, &n);
    uint64_t h = rpt_mix(5, n);
    tf_py_frame f;
    while (has && tf_py_walk_next(&w, &f))
        h = rpt_mix(rpt_mix(h, rpt_canon_code(c, f.code)), f.line);
    struct py_ctx ctx = { c, id };
    return canon_of(&c->py_stack, &c->py_by_content, id, has, h, same_py, &ctx);
}

/* ------------------------------------------------------------ native stacks */

/* The module's path: modules loaded again are one (the same file). */
static int same_module(const tf_module *a, const tf_module *b)
{
    return a == b || (a && b && a->path && b->path && !strcmp(a->path, b->path));
}

struct native_ctx { const tf_reader *rd; uint32_t id; };

static int same_native(const void *ctx, uint64_t other)
{
    const struct native_ctx *k = ctx;
    const uint64_t *a, *b;
    uint32_t na, nb;
    if (!tf_reader_native_stack(k->rd, k->id, &a, &na) || !tf_reader_native_stack(k->rd, (uint32_t)other, &b, &nb) ||
        na != nb || memcmp(a, b, na * sizeof *a))
        return 0;
    for (uint32_t i = 0; i < na; i++)
        if (!same_module(tf_reader_stack_module(k->rd, k->id, a[i]),
                         tf_reader_stack_module(k->rd, (uint32_t)other, b[i])))
            return 0;
    return 1;
}

uint32_t rpt_canon_native_stack(rpt_canon *c, uint32_t id)
{
    if (!id)
        return 0;
    uint64_t *known = rp_ptrmap_get(&c->native, id);
    if (known)
        return (uint32_t)*known;
    const uint64_t *ips;
    uint32_t n = 0;
    int has = tf_reader_native_stack(c->rd, id, &ips, &n);
    uint64_t h = rpt_mix(7, n);
    for (uint32_t i = 0; has && i < n; i++)
        h = rpt_mix(h, ips[i]);
    struct native_ctx ctx = { c->rd, id };
    return canon_of(&c->native, &c->native_by_content, id, has, h, same_native, &ctx);
}

/* ------------------------------------------------------------------ places */

/* One element of a place: a frame of the program (ip, module), or a run of
 * other frames (run: 1 the tracer's, 2 the others'). */
typedef struct place_part { uint64_t ip; const char *module; int run; } place_part;

/* The parts of native stack id, copied (the frames' cache moves as other
 * stacks are resolved); -1 when it is deeper than PLACE_FRAMES or has no
 * frames to be had. */
static int place_parts(rn_stacks *st, uint32_t id, place_part *out)
{
    const rn_native_frame *f[PLACE_FRAMES];
    uint32_t depth = rn_stacks_native_depth(st, id);
    if (!depth || depth > PLACE_FRAMES)
        return -1;
    uint32_t n = rn_stacks_native(st, id, f, PLACE_FRAMES);
    int parts = 0;
    for (uint32_t i = 0; i < n; i++) {
        int run = f[i]->kind == RN_FRAME_USER ? 0 : f[i]->kind == RN_FRAME_TRACER ? 1 : 2;
        if (run && parts && out[parts - 1].run == run)
            continue;   /* the run goes on */
        out[parts++] = (place_part){ .ip = run ? 0 : f[i]->ip, .module = run ? NULL : f[i]->module, .run = run };
    }
    return parts;
}

struct place_ctx { rn_stacks *st; const place_part *parts; int n; };

static int same_place(const void *ctx, uint64_t other)
{
    const struct place_ctx *k = ctx;
    place_part p[PLACE_FRAMES];
    if (place_parts(k->st, (uint32_t)other, p) != k->n)
        return 0;
    for (int i = 0; i < k->n; i++)
        if (p[i].run != k->parts[i].run || p[i].ip != k->parts[i].ip ||
            !(p[i].module == k->parts[i].module ||
              (p[i].module && k->parts[i].module && !strcmp(p[i].module, k->parts[i].module))))
            return 0;
    return 1;
}

uint32_t rpt_canon_place(rpt_canon *c, uint32_t native)
{
    if (!native)
        return 0;
    uint64_t *known = rp_ptrmap_get(&c->place, native);
    if (known)
        return (uint32_t)*known;
    place_part parts[PLACE_FRAMES];
    int n = c->stacks ? place_parts(c->stacks, native, parts) : -1;
    if (n < 0) {   /* as it is, frame by frame */
        uint32_t canon = rpt_canon_native_stack(c, native);
        rp_ptrmap_put(&c->place, native, canon);
        return canon;
    }
    uint64_t h = rpt_mix(11, (uint64_t)n);
    for (int i = 0; i < n; i++)
        h = rpt_mix(rpt_mix(h, parts[i].ip), (uint64_t)parts[i].run);
    struct place_ctx ctx = { c->stacks, parts, n };
    return canon_of(&c->place, &c->place_by_content, native, 1, h, same_place, &ctx);
}
