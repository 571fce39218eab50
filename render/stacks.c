/*
 * stacks.c - resolve stack ids through the reader, once.
 *
 * Two caches, both keyed through the format's id map (ids are hashed there,
 * so hostile ids cost nothing): distinct frames, keyed by a hash of (module,
 * address, outer), or for Python of (code, line), checked against the
 * entry; and stacks, by id, as lists of frame numbers.  A frame's text and
 * JSON are made once however many stacks hold it: deep Python stacks that
 * differ in a frame or two (a recursion, a framework's layers) once cost a
 * copy of every frame per stack, and trace-dump --json ran out of memory on
 * a 2 MB log.
 */
#include "stacks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idmap.h"
#include "json.h"
#include "symbolize.h"

typedef struct frame_entry {
    rn_native_frame f;
    const tf_module *m;        /* the key: module, address, and whether it is a return address */
    int outer;
    uint32_t json, json_len;   /* its JSON in s->json (json_len 0: not rendered yet) */
} frame_entry;

typedef struct py_entry {
    rn_py_frame f;
    uint32_t code;             /* the key, with f.line */
    uint32_t json, json_len;   /* as frame_entry's */
} py_entry;

typedef struct stack_entry { uint32_t first, n; } stack_entry;

/* An array whose entries never move: blocks of STABLE_BLOCK entries, found
 * through a table of blocks (which alone is reallocated).  The frames are
 * handed out as pointers valid until rn_stacks_free (stacks.h): a frame
 * array that grew with realloc moved the frames of the stacks resolved
 * before, under the callers' feet. */
#define STABLE_BITS 10
#define STABLE_BLOCK (1u << STABLE_BITS)
typedef struct stable {
    char **blocks;
    uint32_t nblocks, capblocks;
} stable;

struct rn_stacks {
    const tf_reader *reader;
    sym_ctx *sym;               /* NULL when libdw could not start: no symbols */
    const char *exe;            /* the traced executable (a static interpreter's frames) */
    stable frames;              /* frame_entry, nframes of them */
    uint32_t nframes;
    tf_idmap frame_index;       /* hash of the key -> frame number */
    uint32_t *refs;             /* the frame numbers of every cached stack */
    size_t nrefs, caprefs;
    stack_entry *native;
    uint32_t nnative, capnative;
    tf_idmap native_index;      /* native stack id -> position in native */
    stable pyframes;            /* py_entry, npyframes of them */
    uint32_t npyframes;
    tf_idmap pyframe_index;     /* hash of (code, line) -> position in pyframes */
    uint32_t *pyrefs;           /* the Python frame numbers of every cached stack */
    size_t npyrefs, cappyrefs;
    stack_entry *pystacks;
    uint32_t npystacks, cappystacks;
    tf_idmap py_index;          /* Python stack id -> position in pystacks */
    char *json;                 /* rendered frames, back to back */
    size_t njson, capjson;
};

static void *grow(void *p, uint32_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    p = realloc(p, ncap * size);
    if (!p || ncap > UINT32_MAX) {
        fprintf(stderr, "out of memory resolving stacks\n");
        exit(2);
    }
    *cap = (uint32_t)ncap;
    return p;
}

static void *grow_size(void *p, size_t *cap, size_t need, size_t size)
{
    uint32_t c = (uint32_t)*cap;
    p = grow(p, &c, need, size);
    *cap = c;
    return p;
}

static inline void *stable_at(const stable *a, size_t size, uint32_t i)
{
    return a->blocks[i >> STABLE_BITS] + (size_t)(i & (STABLE_BLOCK - 1)) * size;
}

/* Entry i, its block made when it is the first of a block not made yet
 * (blocks made before rn_stacks_use_reader emptied the array are used
 * again). */
static void *stable_slot(stable *a, size_t size, uint32_t i)
{
    uint32_t b = i >> STABLE_BITS;
    if (b >= a->nblocks) {
        a->blocks = grow(a->blocks, &a->capblocks, (size_t)b + 1, sizeof *a->blocks);
        if (!(a->blocks[b] = malloc(STABLE_BLOCK * size))) {
            fprintf(stderr, "out of memory resolving stacks\n");
            exit(2);
        }
        a->nblocks = b + 1;
    }
    return stable_at(a, size, i);
}

static void stable_free(stable *a)
{
    for (uint32_t b = 0; b < a->nblocks; b++)
        free(a->blocks[b]);
    free(a->blocks);
}

#define FRAME(s, i) ((frame_entry *)stable_at(&(s)->frames, sizeof(frame_entry), (i)))
#define PYFRAME(s, i) ((py_entry *)stable_at(&(s)->pyframes, sizeof(py_entry), (i)))

static void index_put(tf_idmap *m, uint32_t key, uint32_t pos)
{
    if (tf_idmap_put(m, key, pos) < 0) {
        fprintf(stderr, "out of memory resolving stacks\n");
        exit(2);
    }
}

rn_stacks *rn_stacks_new(const tf_reader *reader, const char *const *debug_dirs, int ndirs)
{
    rn_stacks *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "out of memory resolving stacks\n");
        exit(2);
    }
    s->sym = sym_new(debug_dirs, ndirs);
    rn_stacks_use_reader(s, reader);
    return s;
}

/* Another reader (the log opened again): what was cached points into the old
 * one's modules and strings, so it goes; symbols found stay with sym. */
void rn_stacks_use_reader(rn_stacks *s, const tf_reader *reader)
{
    if (s->reader && reader != s->reader) {
        s->nframes = s->nnative = s->npystacks = s->npyframes = 0;
        s->nrefs = s->npyrefs = s->njson = 0;
        tf_idmap_free(&s->frame_index);
        tf_idmap_free(&s->pyframe_index);
        tf_idmap_free(&s->native_index);
        tf_idmap_free(&s->py_index);
    }
    s->reader = reader;
    const tf_header *h = reader ? tf_reader_header(reader) : NULL;
    s->exe = h && h->exe && *h->exe ? h->exe : NULL;
}

void rn_stacks_free(rn_stacks *s)
{
    if (!s)
        return;
    if (s->sym)
        sym_free(s->sym);
    stable_free(&s->frames);
    free(s->refs);
    free(s->native);
    stable_free(&s->pyframes);
    free(s->pyrefs);
    free(s->pystacks);
    free(s->json);
    tf_idmap_free(&s->frame_index);
    tf_idmap_free(&s->pyframe_index);
    tf_idmap_free(&s->native_index);
    tf_idmap_free(&s->py_index);
    free(s);
}

/* ---------------------------------------------------------------- kinds */

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path ? path : "";
}

static int starts(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

/* Whose code the frame is: by its module first, by its function for the
 * start-up code that lives in libc and the executable. */
static rn_frame_kind kind_of(const rn_stacks *s, const rn_native_frame *f)
{
    const char *mod = base_name(f->module);
    if (starts(mod, "libtrace.so"))
        return RN_FRAME_TRACER;
    if (starts(mod, "libpython"))
        return RN_FRAME_INTERPRETER;
    if (starts(mod, "ld-linux") || starts(mod, "ld.so") || starts(mod, "ld64.so"))
        return RN_FRAME_STARTUP;
    static const char *const startup[] = {
        "_start", "__libc_start_main", "__libc_start_call_main", "__libc_start_main_impl", "start_thread",
        "clone", "clone3", "__clone", "__clone3",
    };
    /* Names may carry a symbol version: __libc_start_main@@GLIBC_2.34. */
    size_t name_len = f->function ? strcspn(f->function, "@") : 0;
    for (size_t i = 0; f->function && i < sizeof startup / sizeof *startup; i++)
        if (strlen(startup[i]) == name_len && !strncmp(f->function, startup[i], name_len))
            return RN_FRAME_STARTUP;
    /* A static interpreter: CPython is the executable itself, all of its
     * code (not only the Py and _Py names: cfunction_vectorcall_O, run_mod
     * and the other static functions were the program's, unfolded). */
    if (f->module && s->exe && !strcmp(f->module, s->exe) && starts(base_name(s->exe), "python"))
        return RN_FRAME_INTERPRETER;
    return RN_FRAME_USER;
}

/* --------------------------------------------------------------- frames */

static uint32_t frame_hash(const tf_module *m, uint64_t ip, int outer)
{
    uint64_t h = (ip ^ (uint64_t)(uintptr_t)m * 0x9e3779b97f4a7c15ULL) * 0xff51afd7ed558ccdULL;
    h ^= h >> 29;
    return (uint32_t)(h ^ (h >> 32)) ^ (uint32_t)outer;
}

/* The frame number of (m, ip, outer), symbolised on first sight, m being
 * the module that held ip when native stack `stack` was recorded (not the
 * one there now: a module unloaded and another loaded at its addresses).
 * Colliding hashes take the next key. */
static uint32_t frame_of(rn_stacks *s, uint32_t stack, uint64_t ip, int outer)
{
    const tf_module *m = tf_reader_stack_module(s->reader, stack, ip);
    uint32_t pos;
    for (uint32_t h = frame_hash(m, ip, outer);; h++) {
        if (!tf_idmap_get(&s->frame_index, h, &pos)) {
            pos = s->nframes;
            index_put(&s->frame_index, h, pos);
            break;
        }
        const frame_entry *e = FRAME(s, pos);
        if (e->m == m && e->f.ip == ip && e->outer == outer)
            return pos;
    }
    if (s->nframes == UINT32_MAX) {
        fprintf(stderr, "out of memory resolving stacks\n");
        exit(2);
    }
    frame_entry *e = stable_slot(&s->frames, sizeof *e, s->nframes++);
    memset(e, 0, sizeof *e);
    e->m = m;
    e->outer = outer;
    e->f.ip = ip;
    if (m) {
        e->f.module = m->path;
        e->f.offset = ip - m->base;
        /* Outer frames hold return addresses: look up the call itself. */
        sym_info info;
        if (s->sym && sym_lookup(s->sym, m, outer ? ip - 1 : ip, &info)) {
            e->f.function = info.function;
            e->f.inlined = info.inlined;
            e->f.file = info.file;
            e->f.line = info.line > 0 ? (uint32_t)info.line : 0;
        }
    }
    e->f.kind = kind_of(s, &e->f);
    return pos;
}

/* The cached entry of native stack id, resolved on first use; NULL when the
 * log has no such stack. */
static const stack_entry *native_entry(rn_stacks *s, uint32_t id)
{
    uint32_t pos;
    if (!s->reader || !id)
        return NULL;
    if (tf_idmap_get(&s->native_index, id, &pos))
        return &s->native[pos];
    const uint64_t *ips;
    uint32_t n;
    if (!tf_reader_native_stack(s->reader, id, &ips, &n))
        return NULL;
    s->refs = grow_size(s->refs, &s->caprefs, s->nrefs + n, sizeof *s->refs);
    stack_entry e = {(uint32_t)s->nrefs, n};
    /* Every frame is a return address, the innermost too: the recorder
     * cuts its own frames off, so the first one kept is where the program
     * called into libtrace.so (a malloc, a cudaMalloc, a collection's
     * callback), not an instruction being executed. */
    for (uint32_t i = 0; i < n; i++)
        s->refs[s->nrefs + i] = frame_of(s, id, ips[i], 1);
    s->nrefs += n;
    s->native = grow(s->native, &s->capnative, (size_t)s->nnative + 1, sizeof *s->native);
    s->native[s->nnative] = e;
    index_put(&s->native_index, id, s->nnative);
    return &s->native[s->nnative++];
}

uint32_t rn_stacks_native(rn_stacks *s, uint32_t id, const rn_native_frame **out, uint32_t max)
{
    const stack_entry *e = native_entry(s, id);
    uint32_t n = e ? (e->n < max ? e->n : max) : 0;
    for (uint32_t i = 0; i < n; i++)
        out[i] = &FRAME(s, s->refs[e->first + i])->f;
    return n;
}

uint32_t rn_stacks_native_depth(rn_stacks *s, uint32_t id)
{
    const stack_entry *e = native_entry(s, id);
    return e ? e->n : 0;
}

/* The number of the Python frame (code, line), resolved on first sight. */
static uint32_t py_frame_of(rn_stacks *s, uint32_t code, uint32_t line)
{
    uint32_t pos;
    uint64_t key = ((uint64_t)code << 32 | line) * 0x9e3779b97f4a7c15ULL;
    for (uint32_t h = (uint32_t)(key >> 32);; h++) {
        if (!tf_idmap_get(&s->pyframe_index, h, &pos)) {
            pos = s->npyframes;
            index_put(&s->pyframe_index, h, pos);
            break;
        }
        if (PYFRAME(s, pos)->code == code && PYFRAME(s, pos)->f.line == line)
            return pos;
    }
    if (s->npyframes == UINT32_MAX) {
        fprintf(stderr, "out of memory resolving stacks\n");
        exit(2);
    }
    const tf_py_code *c = tf_reader_py_code(s->reader, code);
    *(py_entry *)stable_slot(&s->pyframes, sizeof(py_entry), s->npyframes) = (py_entry){
        .f = { .file = c ? tf_reader_string(s->reader, c->file, NULL) : NULL,
               .function = c ? tf_reader_string(s->reader, c->function, NULL) : NULL,
               .line = line },
        .code = code,
    };
    return s->npyframes++;
}

/* The cached entry of Python stack id, resolved on first use; NULL when
 * the log has no such stack. */
static const stack_entry *py_entry_of(rn_stacks *s, uint32_t id)
{
    uint32_t pos;
    if (!s->reader || !id)
        return NULL;
    if (tf_idmap_get(&s->py_index, id, &pos))
        return &s->pystacks[pos];
    const tf_py_frame *frames;
    uint32_t n;
    if (!tf_reader_py_stack(s->reader, id, &frames, &n))
        return NULL;
    s->pyrefs = grow_size(s->pyrefs, &s->cappyrefs, s->npyrefs + n, sizeof *s->pyrefs);
    for (uint32_t i = 0; i < n; i++)
        s->pyrefs[s->npyrefs + i] = py_frame_of(s, frames[i].code, frames[i].line);
    s->pystacks = grow(s->pystacks, &s->cappystacks, (size_t)s->npystacks + 1, sizeof *s->pystacks);
    s->pystacks[s->npystacks] = (stack_entry){(uint32_t)s->npyrefs, n};
    s->npyrefs += n;
    index_put(&s->py_index, id, s->npystacks);
    return &s->pystacks[s->npystacks++];
}

uint32_t rn_stacks_py(rn_stacks *s, uint32_t id, const rn_py_frame **out, uint32_t max)
{
    const stack_entry *e = py_entry_of(s, id);
    uint32_t n = e ? (e->n < max ? e->n : max) : 0;
    for (uint32_t i = 0; i < n; i++)
        out[i] = &PYFRAME(s, s->pyrefs[e->first + i])->f;
    return n;
}

static int contains_lower(const char *name, const char *key)
{
    char low[256];
    size_t n = 0;
    for (; name[n] && n + 1 < sizeof low; n++)
        low[n] = (char)(name[n] >= 'A' && name[n] <= 'Z' ? name[n] - 'A' + 'a' : name[n]);
    low[n] = 0;
    return strstr(low, key) != NULL;
}

static const char *function_at(rn_stacks *s, uint32_t id, const uint64_t *ips, uint32_t i)
{
    const tf_module *m = tf_reader_stack_module(s->reader, id, ips[i]);
    /* Frames hold return addresses: the call itself, as frame_of. */
    return m ? sym_function(s->sym, m, ips[i] - 1) : NULL;
}

const char *rn_stacks_module_differs(rn_stacks *s, const tf_module *m)
{
    return s && s->sym ? sym_module_differs(s->sym, m) : NULL;
}

uint32_t rn_stacks_functions(rn_stacks *s, uint32_t id, const char **out, uint32_t max)
{
    const uint64_t *ips;
    uint32_t n;
    if (!s->reader || !s->sym || !id || !tf_reader_native_stack(s->reader, id, &ips, &n))
        return 0;
    if (n > max)
        n = max;
    for (uint32_t i = 0; i < n; i++)
        out[i] = function_at(s, id, ips, i);
    return n;
}

int rn_stacks_has_function(rn_stacks *s, uint32_t id, const char *key)
{
    const uint64_t *ips;
    uint32_t n;
    if (!s->reader || !s->sym || !id || !tf_reader_native_stack(s->reader, id, &ips, &n))
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *fn = function_at(s, id, ips, i);
        if (fn && contains_lower(fn, key))
            return 1;
    }
    return 0;
}

/* ----------------------------------------------------------------- JSON */

static const char *const kind_names[] = {
    [RN_FRAME_USER] = "user", [RN_FRAME_INTERPRETER] = "interpreter", [RN_FRAME_STARTUP] = "startup",
    [RN_FRAME_TRACER] = "tracer",
};

static void add(rn_stacks *s, const char *text, size_t n)
{
    s->json = grow_size(s->json, &s->capjson, s->njson + n, 1);
    memcpy(s->json + s->njson, text, n);
    s->njson += n;
}

static void add_str(rn_stacks *s, const char *key, const char *v)
{
    add(s, key, strlen(key));
    if (v)
        rn_json_quote(&s->json, &s->njson, &s->capjson, v, strlen(v));
    else
        add(s, "null", 4);
}

static void add_num(rn_stacks *s, const char *fmt, unsigned long long v)
{
    char text[48];
    int n = snprintf(text, sizeof text, fmt, v);
    add(s, text, (size_t)n);
}

static void render_native(rn_stacks *s, frame_entry *e)
{
    const rn_native_frame *f = &e->f;
    size_t start = s->njson;
    add_num(s, "{\"ip\":\"0x%llx\"", (unsigned long long)f->ip);
    add_str(s, ",\"module\":", f->module);
    if (f->module)
        add_num(s, ",\"offset\":\"0x%llx\"", (unsigned long long)f->offset);
    else
        add(s, ",\"offset\":null", 14);
    add_str(s, ",\"function\":", f->function);
    add_str(s, ",\"inlined\":", f->inlined);
    add_str(s, ",\"file\":", f->file);
    if (f->line)
        add_num(s, ",\"line\":%llu", f->line);
    else
        add(s, ",\"line\":null", 12);
    add_str(s, ",\"kind\":", kind_names[f->kind]);
    add(s, "}", 1);
    e->json = (uint32_t)start;
    e->json_len = (uint32_t)(s->njson - start);
}

static void render_py(rn_stacks *s, py_entry *e)
{
    size_t start = s->njson;
    add_str(s, "{\"file\":", e->f.file);
    add_num(s, ",\"line\":%llu", e->f.line);
    add_str(s, ",\"function\":", e->f.function);
    add(s, "}", 1);
    e->json = (uint32_t)start;
    e->json_len = (uint32_t)(s->njson - start);
}

void rn_json_stacks(rn_json *j, rn_stacks *s, uint32_t native, uint32_t py)
{
    const stack_entry *e = native_entry(s, native);
    int cut = 0;
    rn_json_arr(j, "native_stack");
    for (uint32_t i = 0; e && i < e->n; i++) {
        frame_entry *f = FRAME(s, s->refs[e->first + i]);
        if (!f->json_len)
            render_native(s, f);
        rn_json_raw(j, NULL, s->json + f->json, f->json_len);
        cut |= !f->f.module;
    }
    rn_json_end_arr(j);
    if (cut)   /* rn_native_walk_cut: only where it holds, so other stacks' JSON is as before */
        rn_json_bool(j, "native_stack_cut", 1);
    const stack_entry *pe = py_entry_of(s, py);
    rn_json_arr(j, "py_stack");
    for (uint32_t i = 0; pe && i < pe->n; i++) {
        py_entry *f = PYFRAME(s, s->pyrefs[pe->first + i]);
        if (!f->json_len)
            render_py(s, f);
        rn_json_raw(j, NULL, s->json + f->json, f->json_len);
    }
    rn_json_end_arr(j);
}

/* ----------------------------------------------------------------- text */

int rn_py_frame_is_cut(const rn_py_frame *f)
{
    return f->file && !*f->file && f->function && !strcmp(f->function, TF_PY_CUT_FUNCTION);
}

uint32_t rn_py_run(const rn_py_frame *const *f, uint32_t n, uint32_t i)
{
    /* Frames of one code object share its strings: compared by address. */
    uint32_t k = 1;
    while (i + k < n && f[i + k]->file == f[i]->file && f[i + k]->function == f[i]->function &&
           f[i + k]->line == f[i]->line)
        k++;
    return k;
}

uint32_t rn_stacks_py_depth(rn_stacks *s, uint32_t id)
{
    const tf_py_frame *frames;
    uint32_t n;
    return s->reader && id && tf_reader_py_stack(s->reader, id, &frames, &n) ? n : 0;
}

void rn_py_frame_text(const rn_py_frame *f, char *buf, size_t len)
{
    if (rn_py_frame_is_cut(f))
        snprintf(buf, len, "... (outer frames not recorded)");
    else
        snprintf(buf, len, "%s:%u (%s)", f->file ? f->file : "?", f->line, f->function ? f->function : "?");
}

int rn_native_walk_cut(const rn_native_frame *const *f, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (!f[i]->module)
            return 1;
    return 0;
}

void rn_native_frame_text(const rn_native_frame *f, char *buf, size_t len)
{
    /* Code inlined into the function: its name first, as its file and line
     * are what follow (the line is not in the function's own code). */
    int n = f->inlined ? snprintf(buf, len, "%s inlined in %s", f->inlined, f->function ? f->function : "??")
                       : snprintf(buf, len, "%s", f->function ? f->function : "??");
    if (f->file && n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " (%s:%u)", f->file, f->line);
    if (n >= 0 && (size_t)n < len) {
        if (f->module)
            snprintf(buf + n, len - (size_t)n, " %s+0x%llx", base_name(f->module), (unsigned long long)f->offset);
        else
            snprintf(buf + n, len - (size_t)n, " 0x%llx", (unsigned long long)f->ip);
    }
}

uint32_t rn_fold_next(const rn_native_frame *const *f, uint32_t n, uint32_t i, const char **what)
{
    *what = NULL;
    if (f[i]->kind == RN_FRAME_USER)
        return 1;
    /* A run of the interpreter and start-up code folds as one, named after
     * the interpreter when it is in it; the tracer's frames fold apart. */
    int tracer = f[i]->kind == RN_FRAME_TRACER, interp = 0;
    uint32_t k = i;
    for (; k < n && f[k]->kind != RN_FRAME_USER && (f[k]->kind == RN_FRAME_TRACER) == tracer; k++)
        interp |= f[k]->kind == RN_FRAME_INTERPRETER;
    if (k - i < 2)
        return 1;
    *what = tracer ? "libtrace.so" : interp ? "CPython" : "start-up";
    return k - i;
}
