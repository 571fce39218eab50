/*
 * reader_defs.c - definition records (strings, stacks, code objects, modules,
 * threads, pools, INFO) and the look-ups the reader offers over them.
 *
 * Every count read from the file is checked against the bytes left in its
 * record before anything is allocated, so a hostile length cannot make the
 * reader allocate more than a small multiple of what it actually decoded.
 */
#include <stdlib.h>
#include <string.h>

#include "reader_internal.h"

static void *list_push(tf_list *l, size_t size)
{
    if (l->count == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 16;
        if (cap <= l->cap)
            return NULL;
        void *items = realloc(l->items, (size_t)cap * size);
        if (!items)
            return NULL;
        l->items = items;
        l->cap = cap;
    }
    return (char *)l->items + (size_t)l->count++ * size;
}

static void *list_at(const tf_list *l, uint32_t i, size_t size)
{
    return (char *)l->items + (size_t)i * size;
}

/* Append an item known by id (a later definition of the same id wins). */
static void *define(tf_list *l, tf_idmap *ids, uint32_t id, size_t size)
{
    void *item = list_push(l, size);
    if (!item)
        return NULL;
    if (tf_idmap_put(ids, id, l->count - 1) < 0) {
        l->count--;
        return NULL;
    }
    return item;
}

static const void *lookup(const tf_list *l, const tf_idmap *ids, uint32_t id, size_t size)
{
    uint32_t pos;
    return tf_idmap_get(ids, id, &pos) ? list_at(l, pos, size) : NULL;
}

/* Reads a count of items that take at least min_bytes each. */
static uint32_t get_count(tf_cursor *c, size_t min_bytes)
{
    uint32_t n = tf_get_u32(c);
    if ((uint64_t)n * min_bytes > (uint64_t)(c->end - c->p))
        c->bad = 1;
    return c->bad ? 0 : n;
}

static const char *get_str(tf_defs *d, tf_cursor *c, uint32_t *len)
{
    uint64_t n;
    const uint8_t *s = tf_get_bytes(c, &n);
    if (len)
        *len = (uint32_t)n;
    return c->bad ? NULL : tf_arena_strndup(&d->arena, s, n);
}

static int absorb_string(tf_defs *d, tf_cursor *c)
{
    uint32_t id = tf_get_u32(c), len;
    const char *s = get_str(d, c, &len);
    if (c->bad)
        return TF_REC_BAD;
    tf_span *e = s ? define(&d->strings, &d->string_ids, id, sizeof *e) : NULL;
    if (!e)
        return TF_REC_NOMEM;
    *e = (tf_span){ .items = s, .n = len };
    return TF_REC_OK;
}

static int absorb_native_stack(tf_defs *d, tf_cursor *c)
{
    uint32_t id = tf_get_u32(c), n = get_count(c, 1);
    if (c->bad)
        return TF_REC_BAD;
    uint64_t *ips = tf_arena_alloc(&d->arena, (size_t)n * sizeof *ips + 1);
    if (!ips)
        return TF_REC_NOMEM;
    uint64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = tf_get_uv(c);
        ips[i] = prev = i == 0 ? v : prev + (uint64_t)tf_unzigzag(v);
    }
    if (c->bad)
        return TF_REC_BAD;
    tf_span *e = define(&d->natives, &d->native_ids, id, sizeof *e);
    if (!e)
        return TF_REC_NOMEM;
    /* The modules its addresses are in are those loaded now: a module
     * unloaded later, and another loaded over its addresses, do not change
     * what the stack's frames were. */
    *e = (tf_span){ .items = ips, .n = n, .push = d->module_clock };
    return TF_REC_OK;
}

static int absorb_py_stack(tf_defs *d, tf_cursor *c)
{
    uint32_t id = tf_get_u32(c), n = get_count(c, 2);
    if (c->bad)
        return TF_REC_BAD;
    tf_py_frame *frames = tf_arena_alloc(&d->arena, (size_t)n * sizeof *frames + 1);
    if (!frames)
        return TF_REC_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        frames[i].code = tf_get_u32(c);
        frames[i].line = tf_get_u32(c);
    }
    if (c->bad)
        return TF_REC_BAD;
    d->py_next = id + 1;
    tf_span *e = define(&d->py_stacks, &d->py_stack_ids, id, sizeof *e);
    if (!e)
        return TF_REC_NOMEM;
    *e = (tf_span){ .items = frames, .n = n };
    return TF_REC_OK;
}

/* Stacks id, id + 1, ... id + n - 1: frames[0] called from stack outer_id
 * (0: none), then each next frame called from the stack before it (2.1's
 * PY_STACK_PUSH defines one, 2.2's PY_STACK_CHAIN several).  Only each
 * frame and where its outer stack is are kept here; a stack becomes one
 * array of frames when first asked for (py_stack_of), so that the interior
 * nodes of a program's stack tree, which events seldom name, cost 12 bytes
 * each, not their depth.  An outer stack not defined (lost to damage, or in
 * a deleted segment) leaves these undefined too, as their own records would
 * have been: a stack is whole or unknown.  A chain deeper than
 * TF_PY_PUSH_DEPTH is refused whole, which bounds what a record can make the
 * reader hold (TF_PY_PUSH_DEPTH frames for each stack it defines). */
static int define_pushes(tf_defs *d, uint32_t id, uint32_t outer_id, const tf_py_frame *frames,
                         uint32_t n)
{
    uint32_t depth = 0, outer = UINT32_MAX;
    if (outer_id) {
        if (!tf_idmap_get(&d->py_stack_ids, outer_id, &outer))
            return TF_REC_OK;
        depth = ((const tf_span *)list_at(&d->py_stacks, outer, sizeof(tf_span)))->n;
    }
    if (depth + n > TF_PY_PUSH_DEPTH)
        return TF_REC_BAD;
    for (uint32_t k = 0; k < n; k++) {
        tf_py_push *p = list_push(&d->py_pushes, sizeof *p);
        if (!p)
            return TF_REC_NOMEM;
        *p = (tf_py_push){ .frame = frames[k], .outer = outer };
        tf_span *e = define(&d->py_stacks, &d->py_stack_ids, id + k, sizeof *e);
        if (!e) {
            d->py_pushes.count--;
            return TF_REC_NOMEM;
        }
        *e = (tf_span){ .items = NULL, .n = ++depth, .push = d->py_pushes.count };
        outer = d->py_stacks.count - 1;
    }
    return TF_REC_OK;
}

static int absorb_py_stack_push(tf_defs *d, tf_cursor *c)
{
    uint32_t id = tf_get_u32(c), outer_id = tf_get_u32(c);
    tf_py_frame frame;
    frame.code = tf_get_u32(c);
    frame.line = tf_get_u32(c);
    if (c->bad)
        return TF_REC_BAD;
    d->py_next = id + 1;
    return define_pushes(d, id, outer_id, &frame, 1);
}

/* 2.2: the ids follow the frame's last Python stack definition, by `gap`;
 * the outer stack is `back` ids before the first (0: none). */
static int absorb_py_stack_chain(tf_defs *d, tf_cursor *c)
{
    uint32_t gap = tf_get_u32(c), back = tf_get_u32(c), n = get_count(c, 2);
    if (c->bad || n == 0 || n > TF_PY_PUSH_DEPTH || (uint64_t)d->py_next + gap + n > UINT32_MAX)
        return TF_REC_BAD;
    uint32_t id = d->py_next + gap;
    if (back >= id)
        return TF_REC_BAD;
    tf_py_frame frames[TF_PY_PUSH_DEPTH];
    for (uint32_t k = 0; k < n; k++) {
        frames[k].code = tf_get_u32(c);
        frames[k].line = tf_get_u32(c);
    }
    if (c->bad)
        return TF_REC_BAD;
    d->py_next = id + n;
    return define_pushes(d, id, back ? id - back : 0, frames, n);
}

static int absorb_py_code(tf_defs *d, tf_cursor *c)
{
    tf_py_code code;
    code.id = tf_get_u32(c);
    code.file = tf_get_u32(c);
    code.function = tf_get_u32(c);
    code.first_line = tf_get_u32(c);
    if (c->bad)
        return TF_REC_BAD;
    tf_py_code *stored = tf_arena_alloc(&d->arena, sizeof *stored);
    tf_py_code **e = stored ? define(&d->py_codes, &d->py_code_ids, code.id, sizeof *e) : NULL;
    if (!e)
        return TF_REC_NOMEM;
    *stored = code;
    *e = stored;
    return TF_REC_OK;
}

static int read_segments(tf_defs *d, tf_cursor *c, tf_module *m)
{
    m->nsegments = get_count(c, 3);
    if (c->bad)
        return TF_REC_BAD;
    tf_segment *segs = tf_arena_alloc(&d->arena, (size_t)m->nsegments * sizeof *segs + 1);
    if (!segs)
        return TF_REC_NOMEM;
    for (uint32_t i = 0; i < m->nsegments; i++) {
        segs[i].vaddr = tf_get_uv(c);
        segs[i].memsz = tf_get_uv(c);
        segs[i].flags = tf_get_u32(c);
    }
    m->segments = segs;
    return c->bad ? TF_REC_BAD : TF_REC_OK;
}

static int absorb_module_load(tf_defs *d, tf_cursor *c)
{
    tf_module *m = tf_arena_alloc(&d->arena, sizeof *m);
    if (!m)
        return TF_REC_NOMEM;
    memset(m, 0, sizeof *m);
    m->id = tf_get_u32(c);
    m->path = get_str(d, c, NULL);
    m->base = tf_get_uv(c);
    uint64_t n;
    const uint8_t *bid = tf_get_bytes(c, &n);
    if (c->bad)
        return TF_REC_BAD;
    m->build_id = (const uint8_t *)tf_arena_strndup(&d->arena, bid, n);
    m->build_id_len = (uint32_t)n;
    if (!m->path || !m->build_id)
        return TF_REC_NOMEM;
    int rc = read_segments(d, c, m);
    if (rc != TF_REC_OK)
        return rc;
    tf_module_entry *e = define(&d->modules, &d->module_ids, m->id, sizeof *e);
    if (!e)
        return TF_REC_NOMEM;
    if (d->module_clock < UINT32_MAX - 1)
        d->module_clock++;
    *e = (tf_module_entry){ m, 1, d->module_clock, UINT32_MAX };
    return TF_REC_OK;
}

static int absorb_module_unload(tf_defs *d, tf_cursor *c)
{
    uint32_t id = tf_get_u32(c);
    if (c->bad)
        return TF_REC_BAD;
    uint32_t pos;
    if (!tf_idmap_get(&d->module_ids, id, &pos))
        return TF_REC_OK;  /* never loaded: nothing to say */
    uint32_t *u = list_push(&d->unloads, sizeof *u);
    if (!u)
        return TF_REC_NOMEM;
    *u = id;
    if (d->module_clock < UINT32_MAX - 1)
        d->module_clock++;
    tf_module_entry *e = list_at(&d->modules, pos, sizeof(tf_module_entry));
    e->loaded = 0;
    e->until = d->module_clock;
    return TF_REC_OK;
}

/* THREAD and POOL: a renamed thread keeps its place in the list.  A THREAD
 * record may go on with the thread's Python name (1.1). */
static int absorb_named(tf_defs *d, tf_list *l, tf_idmap *ids, tf_cursor *c)
{
    uint32_t num = tf_get_u32(c);
    const char *name = get_str(d, c, NULL);
    const char *py_name = "";
    if (l == &d->threads && !c->bad && name && c->p < c->end)
        py_name = get_str(d, c, NULL);
    if (c->bad)
        return TF_REC_BAD;
    if (!name || !py_name)
        return TF_REC_NOMEM;
    uint32_t pos;
    int known = tf_idmap_get(ids, num, &pos);
    tf_named *e = known ? list_at(l, pos, sizeof *e) : define(l, ids, num, sizeof *e);
    if (!e)
        return TF_REC_NOMEM;
    d->thread_renames += known && l == &d->threads;
    *e = (tf_named){ num, name, py_name };
    return TF_REC_OK;
}

static int absorb_info(tf_defs *d, tf_cursor *c)
{
    const char *key = get_str(d, c, NULL);
    const char *value = key ? get_str(d, c, NULL) : NULL;
    if (c->bad)
        return TF_REC_BAD;
    tf_info *e = value ? list_push(&d->infos, sizeof *e) : NULL;
    if (!e)
        return TF_REC_NOMEM;
    *e = (tf_info){ key, value };
    return TF_REC_OK;
}

static int absorb_checkpoint(tf_defs *d, tf_cursor *c)
{
    uint64_t seq = tf_get_uv(c), n;
    const char *producer = get_str(d, c, NULL);
    const uint8_t *state = tf_get_bytes(c, &n);
    if (c->bad || !producer)
        return c->bad ? TF_REC_BAD : TF_REC_NOMEM;
    void *copy = tf_arena_alloc(&d->arena, n ? (size_t)n : 1);
    if (!copy)
        return TF_REC_NOMEM;
    memcpy(copy, state, (size_t)n);
    d->checkpoint.present = 1;
    d->checkpoint.seq = seq;
    d->checkpoint.producer = producer;
    d->checkpoint.state = copy;
    d->checkpoint.len = (size_t)n;
    return TF_REC_OK;
}

void tf_defs_frame(tf_defs *d)
{
    d->py_next = 0;
}

int tf_defs_absorb(tf_defs *d, uint32_t kind, tf_cursor *c)
{
    switch (kind) {
    case TF_REC_STRING: return absorb_string(d, c);
    case TF_REC_NATIVE_STACK: return absorb_native_stack(d, c);
    case TF_REC_PY_STACK: return absorb_py_stack(d, c);
    case TF_REC_PY_STACK_PUSH: return absorb_py_stack_push(d, c);
    case TF_REC_PY_STACK_CHAIN: return absorb_py_stack_chain(d, c);
    case TF_REC_PY_CODE: return absorb_py_code(d, c);
    case TF_REC_MODULE_LOAD: return absorb_module_load(d, c);
    case TF_REC_MODULE_UNLOAD: return absorb_module_unload(d, c);
    case TF_REC_THREAD: return absorb_named(d, &d->threads, &d->thread_ids, c);
    case TF_REC_POOL: return absorb_named(d, &d->pools, &d->pool_ids, c);
    case TF_REC_INFO: return absorb_info(d, c);
    case TF_REC_CHECKPOINT: return absorb_checkpoint(d, c);
    default: return TF_REC_OK;  /* a newer minor version's definition: skipped */
    }
}

/* A segment's restatement read after a gap (reader_input.c): what is
 * already known is not taken twice (a module by its id, an unload of a
 * module already unloaded, an INFO record identical to one read). */
int tf_defs_absorb_restated(tf_defs *d, uint32_t kind, tf_cursor *c)
{
    tf_cursor peek = *c;
    uint32_t pos;
    if (kind == TF_REC_MODULE_LOAD || kind == TF_REC_MODULE_UNLOAD) {
        uint32_t id = tf_get_u32(&peek);
        if (!peek.bad && tf_idmap_get(&d->module_ids, id, &pos) &&
            (kind == TF_REC_MODULE_LOAD || !((tf_module_entry *)list_at(&d->modules, pos, sizeof(tf_module_entry)))->loaded))
            return TF_REC_OK;
    } else if (kind == TF_REC_INFO) {
        uint64_t klen, vlen;
        const uint8_t *key = tf_get_bytes(&peek, &klen), *value = tf_get_bytes(&peek, &vlen);
        for (uint32_t i = 0; !peek.bad && i < d->infos.count; i++) {
            const tf_info *e = list_at(&d->infos, i, sizeof *e);
            if (strlen(e->key) == klen && !memcmp(e->key, key, klen) && strlen(e->value) == vlen &&
                !memcmp(e->value, value, vlen))
                return TF_REC_OK;
        }
    }
    return tf_defs_absorb(d, kind, c);
}

void tf_defs_free(tf_defs *d)
{
    tf_list *lists[] = { &d->strings, &d->natives, &d->py_stacks, &d->py_pushes, &d->py_codes,
                         &d->modules, &d->threads, &d->pools, &d->infos, &d->unloads };
    tf_idmap *maps[] = { &d->string_ids, &d->native_ids, &d->py_stack_ids, &d->py_code_ids,
                         &d->module_ids, &d->thread_ids, &d->pool_ids };
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
        free(lists[i]->items);
    for (size_t i = 0; i < sizeof maps / sizeof *maps; i++)
        tf_idmap_free(maps[i]);
    tf_arena_free(&d->arena);
}

/* ------------------------------------------------------------ look-ups */

const char *tf_reader_string(const tf_reader *r, uint32_t id, size_t *len)
{
    const tf_span *s = lookup(&r->defs.strings, &r->defs.string_ids, id, sizeof *s);
    if (len)
        *len = s ? s->n : 0;
    return s ? s->items : NULL;
}

int tf_reader_native_stack(const tf_reader *r, uint32_t id, const uint64_t **ips, uint32_t *n)
{
    const tf_span *s = lookup(&r->defs.natives, &r->defs.native_ids, id, sizeof *s);
    if (!s)
        return 0;
    *ips = s->items;
    *n = s->n;
    return 1;
}

/* The frames of the stack at position pos, made one array the first time a
 * pushed stack is asked for: its pushed frames from the innermost out, then
 * the frames of the first stack on the way that has them (a whole record's,
 * or one made before).  NULL when out of memory. */
static const tf_py_frame *py_stack_of(tf_defs *d, uint32_t pos)
{
    tf_span *s = list_at(&d->py_stacks, pos, sizeof *s);
    if (s->items)
        return s->items;
    tf_py_frame *frames = tf_arena_alloc(&d->arena, (size_t)s->n * sizeof *frames);
    if (!frames)
        return NULL;
    uint32_t i = 0;
    const tf_span *at = s;
    while (i < s->n && !at->items) {
        const tf_py_push *p = list_at(&d->py_pushes, at->push - 1, sizeof *p);
        frames[i++] = p->frame;
        if (p->outer == UINT32_MAX)
            break;
        at = list_at(&d->py_stacks, p->outer, sizeof *at);
    }
    /* Depths were added up when the pushes were read: what is left is the
     * made stack's frames exactly. */
    if (i < s->n)
        memcpy(frames + i, at->items, (size_t)(s->n - i) * sizeof *frames);
    s->items = frames;
    return frames;
}

/* A reader is used by one thread at a time: a look-up may make a pushed
 * stack's array (py_stack_of), the one thing that changes under a const
 * reader. */
int tf_reader_py_stack(const tf_reader *r, uint32_t id, const tf_py_frame **frames, uint32_t *n)
{
    tf_defs *d = (tf_defs *)&r->defs;
    uint32_t pos;
    if (!tf_idmap_get(&d->py_stack_ids, id, &pos))
        return 0;
    const tf_py_frame *f = py_stack_of(d, pos);
    if (!f)
        return 0;
    *frames = f;
    *n = ((const tf_span *)list_at(&d->py_stacks, pos, sizeof(tf_span)))->n;
    return 1;
}

int tf_reader_py_walk(const tf_reader *r, uint32_t id, tf_py_walk *w, uint32_t *depth)
{
    const tf_defs *d = &r->defs;
    uint32_t pos;
    if (!tf_idmap_get(&d->py_stack_ids, id, &pos))
        return 0;
    const tf_span *s = list_at(&d->py_stacks, pos, sizeof *s);
    *w = (tf_py_walk){ .r = r, .array = s->items, .at = pos, .left = s->n };
    *depth = s->n;
    return 1;
}

/* The pushed frames from the innermost out, then the array of the first
 * stack on the way that has one (as py_stack_of copies them). */
int tf_py_walk_next(tf_py_walk *w, tf_py_frame *f)
{
    if (!w->left)
        return 0;
    const tf_defs *d = &w->r->defs;
    if (!w->array) {
        const tf_span *at = list_at(&d->py_stacks, w->at, sizeof *at);
        if (at->items) {
            w->array = at->items;
        } else {
            const tf_py_push *p = list_at(&d->py_pushes, at->push - 1, sizeof *p);
            *f = p->frame;
            w->left--;
            if (p->outer == UINT32_MAX)
                w->left = 0;   /* the outermost (the depths were added up when read) */
            w->at = p->outer;
            return 1;
        }
    }
    *f = *w->array++;
    w->left--;
    return 1;
}

const tf_py_code *tf_reader_py_code(const tf_reader *r, uint32_t id)
{
    tf_py_code *const *c = lookup(&r->defs.py_codes, &r->defs.py_code_ids, id, sizeof *c);
    return c ? *c : NULL;
}

int tf_reader_py_code_is_cut(const tf_reader *r, uint32_t id)
{
    const tf_py_code *c = tf_reader_py_code(r, id);
    size_t flen, fnlen;
    const char *file = c && c->first_line == 0 ? tf_reader_string(r, c->file, &flen) : NULL;
    const char *function = file && flen == 0 ? tf_reader_string(r, c->function, &fnlen) : NULL;
    return function && fnlen == sizeof TF_PY_CUT_FUNCTION - 1 &&
           memcmp(function, TF_PY_CUT_FUNCTION, fnlen) == 0;
}

static const char *named_lookup(const tf_list *l, const tf_idmap *ids, uint32_t num)
{
    const tf_named *e = lookup(l, ids, num, sizeof *e);
    return e ? e->name : NULL;
}

const char *tf_reader_thread_name(const tf_reader *r, uint32_t tid)
{
    return named_lookup(&r->defs.threads, &r->defs.thread_ids, tid);
}

const char *tf_reader_thread_py_name(const tf_reader *r, uint32_t tid)
{
    uint32_t pos;
    if (!tf_idmap_get(&r->defs.thread_ids, tid, &pos))
        return "";
    const tf_named *e = list_at(&r->defs.threads, pos, sizeof *e);
    return e->py_name ? e->py_name : "";
}

const char *tf_reader_pool_name(const tf_reader *r, uint32_t pool)
{
    return named_lookup(&r->defs.pools, &r->defs.pool_ids, pool);
}

static int module_holds(const tf_module *m, uint64_t ip)
{
    for (uint32_t i = 0; i < m->nsegments; i++) {
        uint64_t start = m->base + m->segments[i].vaddr;
        if (ip >= start && ip - start < m->segments[i].memsz)
            return 1;
    }
    return 0;
}

const tf_module *tf_reader_module_for(const tf_reader *r, uint64_t ip)
{
    const tf_module_entry *e = r->defs.modules.items;
    /* Newest first: an address reused after an unload belongs to the later
     * module. */
    for (uint32_t i = r->defs.modules.count; i-- > 0;)
        if (e[i].loaded && module_holds(e[i].m, ip))
            return e[i].m;
    return NULL;
}

const tf_module *tf_reader_stack_module(const tf_reader *r, uint32_t stack, uint64_t ip)
{
    const tf_span *span = lookup(&r->defs.natives, &r->defs.native_ids, stack, sizeof *span);
    if (!span)
        return tf_reader_module_for(r, ip);
    uint32_t at = span->push;
    const tf_module_entry *e = r->defs.modules.items;
    for (uint32_t i = r->defs.modules.count; i-- > 0;)
        if (e[i].from <= at && at < e[i].until && module_holds(e[i].m, ip))
            return e[i].m;
    /* None then: a module whose code ran before the log had it (a
     * constructor run by the dlopen that loaded it, before the recorder
     * saw the load), the first loaded after the stack. */
    for (uint32_t i = 0; i < r->defs.modules.count; i++)
        if (e[i].from > at && module_holds(e[i].m, ip))
            return e[i].m;
    return NULL;
}

const tf_module *tf_reader_module(const tf_reader *r, uint32_t id)
{
    const tf_module_entry *e = lookup(&r->defs.modules, &r->defs.module_ids, id, sizeof *e);
    return e ? e->m : NULL;
}

uint32_t tf_reader_module_count(const tf_reader *r)
{
    return r->defs.modules.count;
}

const tf_module *tf_reader_module_at(const tf_reader *r, uint32_t i)
{
    if (i >= r->defs.modules.count)
        return NULL;
    const tf_module_entry *e = list_at(&r->defs.modules, i, sizeof *e);
    return e->m;
}

uint32_t tf_reader_unload_count(const tf_reader *r)
{
    return r->defs.unloads.count;
}

uint32_t tf_reader_unload_at(const tf_reader *r, uint32_t i)
{
    return i < r->defs.unloads.count ? *(const uint32_t *)list_at(&r->defs.unloads, i, sizeof(uint32_t)) : 0;
}

uint32_t tf_reader_info_count(const tf_reader *r)
{
    return r->defs.infos.count;
}

int tf_reader_info(const tf_reader *r, uint32_t i, const char **key, const char **value)
{
    if (i >= r->defs.infos.count)
        return 0;
    const tf_info *e = list_at(&r->defs.infos, i, sizeof *e);
    *key = e->key;
    *value = e->value;
    return 1;
}

int tf_reader_checkpoint(const tf_reader *r, uint64_t *seq, const char **producer, const void **state, size_t *len)
{
    if (!r->defs.checkpoint.present)
        return 0;
    *seq = r->defs.checkpoint.seq;
    *producer = r->defs.checkpoint.producer;
    *state = r->defs.checkpoint.state;
    *len = r->defs.checkpoint.len;
    return 1;
}

static int named_at(const tf_list *l, uint32_t i, uint32_t *num, const char **name)
{
    if (i >= l->count)
        return 0;
    const tf_named *e = list_at(l, i, sizeof *e);
    *num = e->num;
    *name = e->name;
    return 1;
}

uint32_t tf_reader_thread_count(const tf_reader *r)
{
    return r->defs.threads.count;
}

int tf_reader_thread_at(const tf_reader *r, uint32_t i, uint32_t *tid, const char **name)
{
    return named_at(&r->defs.threads, i, tid, name);
}

uint64_t tf_reader_thread_renames(const tf_reader *r)
{
    return r->defs.thread_renames;
}

uint32_t tf_reader_pool_count(const tf_reader *r)
{
    return r->defs.pools.count;
}

int tf_reader_pool_at(const tf_reader *r, uint32_t i, uint32_t *pool, const char **name)
{
    return named_at(&r->defs.pools, i, pool, name);
}
