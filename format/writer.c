/*
 * writer.c - encodes records into the current chunk (FORMAT.md section 3, "Records").
 *
 * Every record is kind, payload length, payload.  The writer keeps the delta
 * bases of the frame being built; the first record after a seal is a FRAME
 * record that restates the bases, so each frame decodes on its own.
 *
 * Events are the hot path: tf_write_event encodes into a buffer reserved up
 * front and allocates nothing while the chunk has room (a caller that seals
 * regularly gets the previous buffer back at each seal).  When it must grow,
 * it grows by mapped pages (pages.h), since it may be inside a signal handler.
 *
 * A writer for a log cut into segments (the header's max_bytes) also keeps a
 * journal: a copy of every definition record of the process's state it
 * encodes (modules still loaded, pools, INFO; not threads: write_named), so that each new segment can open
 * with them (tf_writer_restate) and be read without the segments before it,
 * which the recorder deletes.  Interned content (strings, stacks, code
 * objects) is not restated: at each new segment the writer forgets it, and
 * what the program uses again is defined again, under a new id, in the
 * segment that uses it.  So a segment costs the definitions it needs, and a
 * run that keeps making new stacks or mark texts stays within its budget.
 */
#include <stdlib.h>
#include <string.h>

#include "event_fields.h"
#include "intern.h"
#include "pages.h"
#include "records.h"
#include "trace_format.h"
#include "varint.h"

#define FIRST_CHUNK_CAP (512u * 1024)
#define HEADER_MAGIC "gputrace"
/* Room for the FRAME record that may precede any record. */
#define FRAME_RECORD_MAX (2 + 3 * TF_VARINT_MAX)
/* Room for a record's kind and length prefixes. */
#define RECORD_PREFIX_MAX (2 * TF_VARINT_MAX)

struct tf_writer {
    tf_chunk chunk;
    int frame_open;          /* a FRAME record starts the current chunk */
    uint64_t frames_sealed;  /* non-empty chunks handed out so far */
    /* Delta bases.  seq and t carry over between frames (FRAME restates
     * them); tid and the pointer classes restart from 0 in every frame. */
    tf_bases b;
    tf_intern strings, native_stacks, py_codes, py_stacks;
    uint32_t modules;
    uint64_t events;
    size_t rec_start;        /* where the record being encoded starts */
    /* Segments: the header to restate, and the journal of definitions. */
    tf_header header;
    char *header_text;       /* the header's strings, copied */
    int journal_on, journal_broken;
    uint8_t *journal;
    size_t journal_len, journal_cap;
    uint32_t epoch;          /* interned content forgotten this many times */
    /* One more than the last Python stack id defined in the current frame
     * (0 before any): what a PY_STACK_CHAIN's id is written against. */
    uint32_t py_next;
    /* The last event's seq.  b.seq is a delta base, which a PY_FREES record
     * leaves at its first free; FRAME, marks and segments say this. */
    uint64_t last_seq;
    /* The PY_FREES record the chunk ends with, while frees may join it.
     * end is FREES_SHUT while none may (none written in this chunk, or it
     * was sealed or rewound since), so that one compare with the chunk's
     * length says both that the record is open and that nothing came after
     * it; the payload's room is a bound on the chunk's length; and both
     * stack ids are one word (frees_stacks).  The test in record_py_free
     * was 28 instructions with frees.open, frame_open and the stacks
     * apart, it is 15 (churn_cycles 0.1 on 3.11: 1.3M fewer). */
    struct {
        size_t start, end;       /* the record's place in the chunk */
        size_t room;             /* the chunk's length up to which one more free fits the record */
        uint64_t parent, ptr;    /* its frees' parent; the last address */
        uint64_t stacks;         /* its native and Python stack ids (frees_stacks) */
        uint32_t domain;
    } frees;
    /* The PY_ALLOCS_SPLIT record the chunk ends with, as frees above (end
     * is FREES_SHUT while none may join), and what its last allocation's
     * successor is written against.  Its three streams grow apart, in
     * `streams` (leads, fields, addresses, STREAM_CAP bytes each), while the
     * chunk holds the record's first allocation and room for the rest: the
     * record's length and the chunk's count them as they join, so what
     * comes after the record is written after that room, and the streams
     * are copied into it once no allocation can join any more (streams_put:
     * when the next record starts, at a seal).  No parse and no move then:
     * a memcpy of each stream. */
    struct {
        size_t start, end;
        size_t payload;          /* where its payload starts: after a length of one byte or two */
        size_t limit;            /* the most that length says */
        size_t counts;           /* where its count and extra go, the streams after them */
        uint64_t parent, size;
        uint32_t py_stack, domain;
        uint8_t *lead, *extra, *addr;  /* the streams' ends */
        /* The chunk's length less the three ends' addresses, while the
         * record may be joined: a join's new length is this and its new
         * ends, with nothing of the old ones kept to measure what it
         * wrote (about 5 instructions an allocation, with the spills). */
        size_t len_less_ends;
        size_t len_max;          /* payload + limit: the most the chunk's length may be */
        int unput;               /* its streams are not in the chunk yet */
        uint8_t *streams;        /* mapped at the first record; NULL before (or out of memory) */
        tf_py_allocs_guess guess;
    } allocs;
    /* The last event's time.  b.t_ns is a delta base, which a PY_ALLOCS
     * record leaves at its first allocation's; the next FRAME says this
     * (tf_writer_seal), and so do marks.  While a PY_ALLOCS record may be
     * joined, its last allocation's time, which the next one's step is
     * from. */
    uint64_t last_t_ns;
    /* The log's time unit (the header's time_unit_ns), in which PY_ALLOCS
     * writes time steps, with no divide per event: a step times unit_inv
     * (the inverse of the unit's odd part), rotated right by unit_shift
     * (the unit's trailing zero bits), is at most unit_qmax (UINT64_MAX /
     * unit) exactly when the step is a whole number of units, and is then
     * that number (the test of divisibility by a multiplicative inverse:
     * Granlund and Montgomery; Lemire, Kaser and Kurz).  One multiply, one
     * rotate and one compare: the test of the low bits, the shift and the
     * multiply it replaced were 5 instructions more a joined py_alloc. */
    uint64_t unit, unit_inv, unit_qmax;
    uint32_t unit_shift;
};

#define FREES_SHUT SIZE_MAX
/* A stream of a PY_ALLOCS_SPLIT record: the payload's most, and an
 * allocation's most past it (written before the record's length is
 * checked). */
#define STREAM_CAP (TF_PY_ALLOCS_PAYLOAD_MAX + TF_PY_ALLOCS_JOIN_MAX)

/* Both stack ids in one word: one compare, and a test against 0 for the
 * frees without stacks (tf_write_py_free_joins_bare). */
static inline uint64_t frees_stacks(uint32_t native_stack, uint32_t py_stack)
{
    return (uint64_t)native_stack << 32 | py_stack;
}

/* The time unit of the header's settings (time_unit_ns=N), 1 without one. */
static uint64_t time_unit_of(const char *settings)
{
    static const char key[] = "time_unit_ns=";
    for (const char *p = settings; p && (p = strstr(p, key)) != NULL; p++)
        if (p == settings || p[-1] == ';') {
            unsigned long long unit = strtoull(p + sizeof key - 1, NULL, 10);
            return unit ? unit : 1;
        }
    return 1;
}

static void set_time_unit(tf_writer *w, uint64_t unit)
{
    w->unit = unit;
    w->unit_shift = (uint32_t)__builtin_ctzll(unit);
    uint64_t odd = unit >> w->unit_shift, inv = odd;
    for (int i = 0; i < 5; i++)
        inv *= 2 - odd * inv;   /* Newton: each step doubles the bits of odd * inv == 1 */
    w->unit_inv = inv;
    w->unit_qmax = UINT64_MAX / unit;
}

/* x rotated right by s (0 to 63): one instruction. */
static inline uint64_t rotate_right(uint64_t x, uint32_t s)
{
    return x >> s | x << (-s & 63);
}

static inline int reserve(tf_writer *w, size_t need)
{
    tf_chunk *c = &w->chunk;
    if (c->cap - c->len >= need)  /* nearly always: no call on the hot path */
        return 0;
    return tf_pages_reserve(&c->data, &c->cap, c->len, need, FIRST_CHUNK_CAP);
}

/* The length prefix is first reserved as one byte; record_end moves the
 * payload when it turns out longer than 127 bytes. */
static uint8_t *record_begin_raw(tf_writer *w, uint32_t kind)
{
    uint8_t *p = tf_put_uv(w->chunk.data + w->chunk.len, kind);
    return p + 1;
}

static void record_end(tf_writer *w, uint8_t *payload, const uint8_t *end)
{
    size_t n = (size_t)(end - payload);
    uint8_t len_bytes[TF_VARINT_MAX];
    size_t extra = (size_t)(tf_put_uv(len_bytes, n) - len_bytes) - 1;
    if (extra)
        memmove(payload + extra, payload, n);
    tf_put_uv(payload - 1, n);
    w->chunk.len = (size_t)(payload + extra + n - w->chunk.data);
}

static void write_frame_record(tf_writer *w)
{
    uint8_t *payload = record_begin_raw(w, TF_REC_FRAME);
    uint8_t *p = tf_put_uv(payload, w->frames_sealed);
    p = tf_put_uv(p, w->last_seq);
    p = tf_put_uv(p, w->b.t_ns);
    record_end(w, payload, p);
    tf_bases_frame(&w->b, w->last_seq, w->b.t_ns);
    w->frame_open = 1;
    w->py_next = 0;
}

/* Makes room for a record of at most max_payload bytes, opening the frame
 * first if needed; returns where the payload goes, or NULL when out of memory
 * (the record is then dropped). */
static uint8_t *record_begin(tf_writer *w, uint32_t kind, size_t max_payload)
{
    if (reserve(w, FRAME_RECORD_MAX + RECORD_PREFIX_MAX + max_payload) < 0)
        return NULL;
    if (!w->frame_open)
        write_frame_record(w);
    w->rec_start = w->chunk.len;
    return record_begin_raw(w, kind);
}

/* Ends a definition record of the process's state, and keeps a copy of it
 * in the journal.  A journal that cannot grow is broken for good: a
 * restatement missing one module would leave later stacks unexplained. */
static void state_end(tf_writer *w, uint8_t *payload, const uint8_t *end)
{
    record_end(w, payload, end);
    if (!w->journal_on || w->journal_broken)
        return;
    size_t n = w->chunk.len - w->rec_start;
    if (tf_pages_reserve(&w->journal, &w->journal_cap, w->journal_len, n, 64u * 1024) < 0) {
        w->journal_broken = 1;
        return;
    }
    memcpy(w->journal + w->journal_len, w->chunk.data + w->rec_start, n);
    w->journal_len += n;
}

static uint8_t *put_bytes(uint8_t *p, const void *s, size_t n)
{
    p = tf_put_uv(p, n);
    if (n)
        memcpy(p, s, n);
    return p + n;
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
    return put_bytes(p, s, s ? strlen(s) : 0);
}

static size_t str_len(const char *s)
{
    return s ? strlen(s) : 0;
}

static size_t header_size(const tf_header *h)
{
    return sizeof HEADER_MAGIC + 20 * TF_VARINT_MAX + str_len(h->hostname) +
           str_len(h->cmdline) + str_len(h->exe) + str_len(h->tracer_version) +
           str_len(h->settings) + str_len(h->python_version);
}

/* The HEADER record at the end of chunk c (the writer's own, or a
 * restatement's). */
static int write_header(tf_chunk *c, const tf_header *h)
{
    if (tf_pages_reserve(&c->data, &c->cap, c->len, RECORD_PREFIX_MAX + header_size(h), FIRST_CHUNK_CAP) < 0)
        return -1;
    uint8_t *payload = tf_put_uv(c->data + c->len, TF_REC_HEADER) + 1;
    uint8_t *p = payload;
    memcpy(p, HEADER_MAGIC, 8);
    p += 8;
    p = tf_put_uv(p, TF_VERSION_MAJOR);
    p = tf_put_uv(p, TF_VERSION_MINOR);
    p = tf_put_uv(p, h->pid);
    p = tf_put_uv(p, h->ppid);
    p = tf_put_uv(p, h->wall_start_ns);
    p = tf_put_uv(p, h->mono_start_ns);
    p = put_str(p, h->hostname);
    p = put_str(p, h->cmdline);
    p = put_str(p, h->exe);
    p = put_str(p, h->tracer_version);
    p = put_str(p, h->settings);
    p = put_str(p, h->python_version);
    p = tf_put_uv(p, tf_zigzag(h->cuda_runtime_version));
    p = tf_put_uv(p, tf_zigzag(h->cuda_driver_version));
    p = tf_put_uv(p, h->max_bytes);
    p = tf_put_uv(p, h->segment);
    p = tf_put_uv(p, h->first_seq);
    /* record_end's job, on a chunk that may not be the writer's. */
    size_t n = (size_t)(p - payload);
    uint8_t len_bytes[TF_VARINT_MAX];
    size_t extra = (size_t)(tf_put_uv(len_bytes, n) - len_bytes) - 1;
    if (extra)
        memmove(payload + extra, payload, n);
    tf_put_uv(payload - 1, n);
    c->len = (size_t)(payload + extra + n - c->data);
    return 0;
}

/* The header again, for restatements: its strings copied into one block. */
static int keep_header(tf_writer *w, const tf_header *h)
{
    const char *const *src[] = { &h->hostname, &h->cmdline, &h->exe, &h->tracer_version, &h->settings,
                                 &h->python_version };
    const char **dst[] = { &w->header.hostname, &w->header.cmdline, &w->header.exe, &w->header.tracer_version,
                           &w->header.settings, &w->header.python_version };
    size_t total = 0;
    for (size_t i = 0; i < sizeof src / sizeof *src; i++)
        total += str_len(*src[i]) + 1;
    w->header = *h;
    w->header_text = malloc(total);
    if (!w->header_text)
        return -1;
    char *p = w->header_text;
    for (size_t i = 0; i < sizeof src / sizeof *src; i++) {
        size_t n = str_len(*src[i]);
        memcpy(p, n ? *src[i] : "", n);
        p[n] = '\0';
        *dst[i] = p;
        p += n + 1;
    }
    return 0;
}

tf_writer *tf_writer_new(const tf_header *h)
{
    tf_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->frees.end = FREES_SHUT;
    w->allocs.end = FREES_SHUT;
    set_time_unit(w, time_unit_of(h->settings));
    w->journal_on = h->max_bytes != 0;
    if (write_header(&w->chunk, h) < 0 || (w->journal_on && keep_header(w, h) < 0)) {
        tf_chunk_free(&w->chunk);
        free(w);
        return NULL;
    }
    return w;
}

int tf_writer_restate(tf_writer *w, uint32_t segment, tf_chunk *out)
{
    if (!w->journal_on || w->journal_broken || w->chunk.len)
        return -1;
    tf_header h = w->header;
    h.segment = segment;
    h.first_seq = w->last_seq + 1;
    out->len = 0;
    if (write_header(out, &h) < 0 ||
        tf_pages_reserve(&out->data, &out->cap, out->len, FRAME_RECORD_MAX + w->journal_len, FIRST_CHUNK_CAP) < 0)
        return -1;
    /* A FRAME record with the bases the next frame will restate: the
     * definitions need none, but every frame's first record after the
     * HEADER is FRAME. */
    uint8_t *payload = tf_put_uv(out->data + out->len, TF_REC_FRAME) + 1;
    uint8_t *p = tf_put_uv(payload, w->frames_sealed);
    p = tf_put_uv(p, w->last_seq);
    p = tf_put_uv(p, w->b.t_ns);
    payload[-1] = (uint8_t)(p - payload);  /* at most 30 bytes: one length byte */
    out->len = (size_t)(p - out->data);
    memcpy(out->data + out->len, w->journal, w->journal_len);
    out->len += w->journal_len;
    tf_intern_forget(&w->strings);
    tf_intern_forget(&w->native_stacks);
    tf_intern_forget(&w->py_codes);
    tf_intern_forget(&w->py_stacks);
    w->epoch++;
    return 0;
}

static size_t intern_bytes(const tf_intern *t)
{
    return (t->slots ? (t->mask + 1) * sizeof *t->slots : 0) + t->keys_cap;
}

size_t tf_writer_interned_bytes(const tf_writer *w)
{
    return intern_bytes(&w->strings) + intern_bytes(&w->native_stacks) + intern_bytes(&w->py_codes) +
           intern_bytes(&w->py_stacks);
}

int tf_writer_forget_interned(tf_writer *w)
{
    if (w->chunk.len)
        return -1;
    tf_intern_forget(&w->strings);
    tf_intern_forget(&w->native_stacks);
    tf_intern_forget(&w->py_codes);
    tf_intern_forget(&w->py_stacks);
    w->epoch++;
    return 0;
}

void tf_writer_forget_native_stacks(tf_writer *w)
{
    tf_intern_forget(&w->native_stacks);
}

uint32_t tf_writer_epoch(const tf_writer *w)
{
    return w->epoch;
}

void tf_writer_free(tf_writer *w)
{
    if (!w)
        return;
    tf_chunk_free(&w->chunk);
    tf_intern_free(&w->strings);
    tf_intern_free(&w->native_stacks);
    tf_intern_free(&w->py_codes);
    tf_intern_free(&w->py_stacks);
    tf_pages_free(w->journal, w->journal_cap);
    if (w->allocs.streams)
        tf_pages_free(w->allocs.streams, 3 * STREAM_CAP);
    free(w->header_text);
    free(w);
}

/* Interns key in t; a new key gets its definition record from encode(). */
typedef uint8_t *(*def_encoder)(uint8_t *p, const void *key, size_t len);

static uint32_t intern(tf_writer *w, tf_intern *t, uint32_t kind, const void *key, size_t len,
                       size_t max_payload, def_encoder encode)
{
    uint64_t hash = tf_intern_hash(key, len);
    uint32_t id = tf_intern_find(t, key, len, hash);
    if (id)
        return id;
    uint8_t *payload = record_begin(w, kind, TF_VARINT_MAX + max_payload);
    if (!payload)
        return 0;
    id = tf_intern_add(t, key, len, hash);
    if (!id)
        return 0;  /* the half-built record is abandoned: chunk.len is unchanged */
    uint8_t *p = tf_put_uv(payload, id);
    record_end(w, payload, encode(p, key, len));
    if (kind == TF_REC_PY_STACK)
        w->py_next = id + 1;
    return id;
}

static uint8_t *encode_string(uint8_t *p, const void *key, size_t len)
{
    return put_bytes(p, key, len);
}

uint32_t tf_write_string(tf_writer *w, const char *s, size_t n)
{
    return intern(w, &w->strings, TF_REC_STRING, s ? s : "", s ? n : 0,
                  TF_VARINT_MAX + n, encode_string);
}

static uint8_t *encode_native_stack(uint8_t *p, const void *key, size_t len)
{
    uint32_t n = (uint32_t)(len / sizeof(uint64_t));
    p = tf_put_uv(p, n);
    uint64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t ip;
        memcpy(&ip, (const uint8_t *)key + i * sizeof ip, sizeof ip);
        p = tf_put_uv(p, i == 0 ? ip : tf_zigzag((int64_t)(ip - prev)));
        prev = ip;
    }
    return p;
}

uint32_t tf_write_native_stack(tf_writer *w, const uint64_t *ips, uint32_t n)
{
    size_t len = (size_t)n * sizeof *ips;
    return intern(w, &w->native_stacks, TF_REC_NATIVE_STACK, n ? (const void *)ips : "", len,
                  TF_VARINT_MAX * (1 + (size_t)n), encode_native_stack);
}

/* A code object's key, three 32-bit numbers, each as a uv. */
static uint8_t *encode_three(uint8_t *p, const void *key, size_t len)
{
    uint32_t v[3];
    memcpy(v, key, len);
    for (int i = 0; i < 3; i++)
        p = tf_put_uv(p, v[i]);
    return p;
}

uint32_t tf_write_py_code(tf_writer *w, uint32_t file, uint32_t function, uint32_t first_line)
{
    uint32_t key[3] = { file, function, first_line };
    return intern(w, &w->py_codes, TF_REC_PY_CODE, key, sizeof key, 3 * TF_VARINT_MAX,
                  encode_three);
}

uint32_t tf_write_py_cut_code(tf_writer *w)
{
    uint32_t file = tf_write_string(w, "", 0);
    uint32_t function = tf_write_string(w, TF_PY_CUT_FUNCTION, sizeof TF_PY_CUT_FUNCTION - 1);
    return file && function ? tf_write_py_code(w, file, function, 0) : 0;
}

static uint8_t *encode_py_stack(uint8_t *p, const void *key, size_t len)
{
    uint32_t n = (uint32_t)(len / sizeof(tf_py_frame));
    p = tf_put_uv(p, n);
    for (uint32_t i = 0; i < n; i++) {
        tf_py_frame f;
        memcpy(&f, (const uint8_t *)key + i * sizeof f, sizeof f);
        p = tf_put_uv(p, f.code);
        p = tf_put_uv(p, f.line);
    }
    return p;
}

/* A pushed frame's key is the outer stack's id and the frame, 12 bytes, which
 * no whole stack's key (8 bytes a frame) can equal; both kinds of key share
 * the table, so a stack's id is one whichever call names it.  The frames
 * found under their callers come first from the outermost; once one is not,
 * none inward can be (its outer stack is new), so they are added without a
 * look-up and defined by one PY_STACK_CHAIN record, whose ids follow each
 * other from one the frame's definitions before it imply.  Should the table
 * stop growing part way, the record defines the frames added so far: the
 * table never holds an id the log does not define. */
uint32_t tf_write_py_stack_push(tf_writer *w, uint32_t outer, const tf_py_frame *frames,
                                uint32_t n, uint32_t *ids)
{
    uint32_t id = outer, i = n;
    for (; i > 0; i--) {
        uint32_t key[3] = { id, frames[i - 1].code, frames[i - 1].line };
        _Static_assert(sizeof key % sizeof(tf_py_frame) != 0, "a push key is no whole stack's");
        uint32_t found = tf_intern_find(&w->py_stacks, key, sizeof key,
                                        tf_intern_hash(key, sizeof key));
        if (!found)
            break;
        id = found;
        if (ids)
            ids[i - 1] = id;
    }
    if (i == 0)
        return id;
    uint8_t *payload = record_begin(w, TF_REC_PY_STACK_CHAIN, TF_VARINT_MAX * (3 + 2 * (size_t)i));
    if (!payload)
        return 0;
    uint32_t first = 0, added = 0, from = id;
    for (uint32_t k = i; k > 0; k--, added++) {
        uint32_t key[3] = { id, frames[k - 1].code, frames[k - 1].line };
        uint32_t got = tf_intern_add(&w->py_stacks, key, sizeof key,
                                     tf_intern_hash(key, sizeof key));
        if (!got)
            break;
        first = first ? first : got;
        id = got;
        if (ids)
            ids[k - 1] = id;
    }
    if (!added)
        return 0;  /* the half-built record is abandoned: chunk.len is unchanged */
    /* Ids only grow, and py_next is one past the largest defined in this
     * frame: the gap is 0 unless something else took ids in between. */
    uint8_t *p = tf_put_uv(payload, first - w->py_next);
    p = tf_put_uv(p, from ? first - from : 0);
    p = tf_put_uv(p, added);
    for (uint32_t k = i; k > i - added; k--) {
        p = tf_put_uv(p, frames[k - 1].code);
        p = tf_put_uv(p, frames[k - 1].line);
    }
    record_end(w, payload, p);
    w->py_next = id + 1;
    return added == i ? id : 0;
}

uint32_t tf_write_py_stack(tf_writer *w, const tf_py_frame *frames, uint32_t n)
{
    if (n && n <= TF_PY_PUSH_DEPTH)
        return tf_write_py_stack_push(w, 0, frames, n, NULL);
    size_t len = (size_t)n * sizeof *frames;
    return intern(w, &w->py_stacks, TF_REC_PY_STACK, n ? (const void *)frames : "", len,
                  TF_VARINT_MAX * (1 + 2 * (size_t)n), encode_py_stack);
}

uint32_t tf_write_module_load(tf_writer *w, const char *path, uint64_t base,
                              const uint8_t *build_id, uint32_t build_id_len,
                              const tf_segment *segs, uint32_t nsegs)
{
    size_t max = 4 * TF_VARINT_MAX + str_len(path) + build_id_len +
                 3 * TF_VARINT_MAX * (size_t)nsegs;
    uint8_t *payload = record_begin(w, TF_REC_MODULE_LOAD, max);
    if (!payload)
        return 0;
    uint32_t id = ++w->modules;
    uint8_t *p = tf_put_uv(payload, id);
    p = put_str(p, path);
    p = tf_put_uv(p, base);
    p = put_bytes(p, build_id, build_id ? build_id_len : 0);
    p = tf_put_uv(p, nsegs);
    for (uint32_t i = 0; i < nsegs; i++) {
        p = tf_put_uv(p, segs[i].vaddr);
        p = tf_put_uv(p, segs[i].memsz);
        p = tf_put_uv(p, segs[i].flags);
    }
    state_end(w, payload, p);
    return id;
}

/* Takes module_id's MODULE_LOAD out of the journal; 1 when it was there.
 * A module loaded and unloaded again is no part of the process's state: a
 * later segment has no event in it (ids are never reused).  Restating
 * each load and unload made the opening of a segment grow with every
 * dlopen/dlclose of the run: 20,000 of them, 97 KB a segment, 212 KB on
 * disk for a 128 KiB budget (follow.rotation_modules).  A scan of the journal (modules, pools, INFO:
 * a few KiB) per unload, beside a dlclose that costs far more. */
static int journal_drop_module(tf_writer *w, uint32_t module_id)
{
    tf_cursor c = { w->journal, w->journal + w->journal_len, 0 };
    while (c.p < c.end && !c.bad) {
        const uint8_t *start = c.p;
        uint64_t kind = tf_get_uv(&c), len = tf_get_uv(&c);
        if (c.bad || len > (uint64_t)(c.end - c.p))
            return 0;
        const uint8_t *next = c.p + len;
        if (kind == TF_REC_MODULE_LOAD) {
            tf_cursor id = { c.p, next, 0 };
            if (tf_get_uv(&id) == module_id && !id.bad) {
                size_t at = (size_t)(start - w->journal), n = (size_t)(next - start);
                memmove(w->journal + at, next, w->journal_len - at - n);
                w->journal_len -= n;
                return 1;
            }
        }
        c.p = next;
    }
    return 0;
}

void tf_write_module_unload(tf_writer *w, uint32_t module_id)
{
    uint8_t *payload = record_begin(w, TF_REC_MODULE_UNLOAD, TF_VARINT_MAX);
    if (!payload)
        return;
    if (w->journal_on && !w->journal_broken && journal_drop_module(w, module_id))
        record_end(w, payload, tf_put_uv(payload, module_id));   /* nothing to restate */
    else
        state_end(w, payload, tf_put_uv(payload, module_id));
}

/* THREAD, POOL and INFO share one shape: a number or string, then a string.
 * THREAD records are not kept in the journal: a thread's names are written
 * again before its first event in each new segment (the recorder does, as
 * it defines stacks again), so a segment names the threads its events
 * need.  Restating every THREAD record ever written made the opening of a
 * segment grow with every thread the process ever ran: about 200 KB after
 * 40,000 short-lived threads, every segment, 433 KB on disk for a 128 KiB
 * budget (follow.rotation_threads). */
static void write_named(tf_writer *w, uint32_t kind, uint32_t num, const char *key,
                        const char *value)
{
    uint8_t *payload = record_begin(w, kind, 2 * TF_VARINT_MAX + str_len(key) + str_len(value));
    if (!payload)
        return;
    uint8_t *p = kind == TF_REC_INFO ? put_str(payload, key) : tf_put_uv(payload, num);
    if (kind == TF_REC_THREAD)
        record_end(w, payload, put_str(p, value));
    else
        state_end(w, payload, put_str(p, value));
}

void tf_write_thread(tf_writer *w, uint32_t tid, const char *name)
{
    write_named(w, TF_REC_THREAD, tid, NULL, name);
}

void tf_write_thread_names(tf_writer *w, uint32_t tid, const char *name, const char *py_name)
{
    if (!py_name || !*py_name) {
        write_named(w, TF_REC_THREAD, tid, NULL, name);
        return;
    }
    uint8_t *payload = record_begin(w, TF_REC_THREAD, 3 * TF_VARINT_MAX + str_len(name) + str_len(py_name));
    if (!payload)
        return;
    uint8_t *p = put_str(tf_put_uv(payload, tid), name);
    record_end(w, payload, put_str(p, py_name));   /* not journaled: write_named */
}

void tf_write_pool(tf_writer *w, uint32_t pool, const char *name)
{
    write_named(w, TF_REC_POOL, pool, NULL, name);
}

void tf_write_info(tf_writer *w, const char *key, const char *value)
{
    write_named(w, TF_REC_INFO, 0, key, value);
}

size_t tf_encode_info_frame(uint8_t *out, size_t cap, uint64_t index, uint64_t seq, uint64_t t_ns,
                            const char *key, const char *value)
{
    size_t klen = str_len(key), vlen = str_len(value);
    if (cap < FRAME_RECORD_MAX + RECORD_PREFIX_MAX + 2 * TF_VARINT_MAX + klen + vlen)
        return 0;
    uint8_t *payload = tf_put_uv(out, TF_REC_FRAME) + 1;
    uint8_t *p = tf_put_uv(tf_put_uv(tf_put_uv(payload, index), seq), t_ns);
    payload[-1] = (uint8_t)(p - payload);   /* at most 30 bytes: one length byte */
    uint8_t len_bytes[TF_VARINT_MAX];
    size_t n = (size_t)(tf_put_uv(len_bytes, klen) - len_bytes) + klen +
               (size_t)(tf_put_uv(len_bytes, vlen) - len_bytes) + vlen;
    p = tf_put_uv(tf_put_uv(p, TF_REC_INFO), n);
    p = put_str(put_str(p, key), value);
    return (size_t)(p - out);
}

void tf_write_checkpoint(tf_writer *w, uint64_t seq, const char *producer, const void *state, size_t len)
{
    uint8_t *payload = record_begin(w, TF_REC_CHECKPOINT, 3 * TF_VARINT_MAX + str_len(producer) + len);
    if (!payload)
        return;
    uint8_t *p = put_str(tf_put_uv(payload, seq), producer);
    /* Not state_end: a checkpoint is not part of the process's state that
     * later segments restate. */
    record_end(w, payload, put_bytes(p, state, len));
}

/* The END event's counts, where the caller left them zero: events written
 * before END, distinct strings / native stacks / Python stacks defined, and
 * frames in the log once the chunk holding END is sealed. */
static void fill_end_counts(const tf_writer *w, tf_event *e)
{
    if (!e->u.end.events) e->u.end.events = w->events;
    if (!e->u.end.strings) e->u.end.strings = tf_intern_ids(&w->strings);
    if (!e->u.end.native_stacks) e->u.end.native_stacks = tf_intern_ids(&w->native_stacks);
    if (!e->u.end.py_stacks) e->u.end.py_stacks = tf_intern_ids(&w->py_stacks);
    if (!e->u.end.frames) e->u.end.frames = w->frames_sealed + 1;
}

/* An event of `kind` (ev->kind, or a constant: tf_put_event_as). */
static inline __attribute__((always_inline)) void write_event_as(tf_writer *w, const tf_event *ev,
                                                                 uint32_t kind)
{
    if (reserve(w, FRAME_RECORD_MAX + 2 + TF_EVENT_PAYLOAD_MAX) < 0)
        return;
    if (!w->frame_open)
        write_frame_record(w);
    w->chunk.len = (size_t)(tf_put_event_as(&w->b, w->chunk.data + w->chunk.len, ev, kind) - w->chunk.data);
    w->events++;
    w->last_seq = ev->seq;
    w->last_t_ns = ev->t_ns;
}

void tf_write_event(tf_writer *w, const tf_event *ev)
{
    if (!tf_event_layout_of(ev->kind))
        return;  /* only kinds this version defines can be encoded */
    tf_event end;
    if (ev->kind == TF_EV_END) {
        end = *ev;
        fill_end_counts(w, &end);
        ev = &end;
    }
    write_event_as(w, ev, ev->kind);
}

/* Every GC allocation is one with TRACE_PY_ALLOCS=1: no kind to look up,
 * no END to fill, the kind's fields encoded from its constant layout. */
void tf_write_py_alloc(tf_writer *w, const tf_event *ev)
{
    write_event_as(w, ev, TF_EV_PY_ALLOC);
}

/* A collection frees its objects one after another with nothing else
 * recorded in between, and as py_free events each cost about 12 bytes
 * before compression (kind, length, presence map, parent, the address
 * whole) and a reading of the clock: in a PY_FREES record a free is its
 * address's difference from the one before, two or three bytes, and
 * shares the record's time (FORMAT.md section 7). */
static inline __attribute__((always_inline)) int py_free_joins(tf_writer *w, uint64_t seq, uint32_t tid,
                                                              uint64_t parent, uint32_t domain,
                                                              uint32_t native_stack, uint32_t py_stack,
                                                              uint64_t ptr)
{
    size_t len = w->chunk.len;
    if (len != w->frees.end || len > w->frees.room || seq != w->last_seq + 1 || tid != w->b.tid ||
        parent != w->frees.parent || domain != w->frees.domain ||
        frees_stacks(native_stack, py_stack) != w->frees.stacks || reserve(w, TF_VARINT_MAX) < 0)
        return 0;
    uint8_t *p = tf_put_uv(w->chunk.data + len, tf_zigzag((int64_t)(ptr - w->frees.ptr)));
    w->chunk.len = (size_t)(p - w->chunk.data);
    w->chunk.data[w->frees.start + 1] += (uint8_t)(w->chunk.len - len);
    w->frees.end = w->chunk.len;
    w->frees.ptr = ptr;
    w->events++;
    w->last_seq = seq;
    return 1;
}

int tf_write_py_free_joins(tf_writer *w, tf_event *e)
{
    if (!py_free_joins(w, e->seq, e->tid, e->parent, e->u.host.domain, e->native_stack, e->py_stack,
                       e->u.host.ptr))
        return 0;
    e->t_ns = w->b.t_ns;
    return 1;
}

int tf_write_py_free_joins_bare(tf_writer *w, uint64_t seq, uint32_t tid, uint64_t parent, uint32_t domain,
                                uint64_t ptr)
{
    return py_free_joins(w, seq, tid, parent, domain, 0, 0, ptr);
}

int tf_write_py_free_joins_leaf(tf_writer *w, uint64_t seq, uint32_t tid, uint64_t parent, uint32_t domain,
                                uint64_t ptr)
{
    /* reserve's room, without its call to grow the chunk (0: the caller
     * goes its general way, tf_write_py_free_joins_bare, which grows it). */
    if (w->chunk.cap - w->chunk.len < TF_VARINT_MAX)
        return 0;
    return py_free_joins(w, seq, tid, parent, domain, 0, 0, ptr);
}

void tf_write_py_frees(tf_writer *w, const tf_event *e)
{
    if (reserve(w, FRAME_RECORD_MAX + 2 + TF_EVENT_PAYLOAD_MAX) < 0)
        return;
    if (!w->frame_open)
        write_frame_record(w);
    size_t start = w->chunk.len;
    w->chunk.len = (size_t)(tf_put_py_frees(&w->b, w->chunk.data + start, e) - w->chunk.data);
    w->frees.start = start;
    w->frees.end = w->chunk.len;
    /* len - start - 2 + TF_VARINT_MAX <= TF_PY_FREES_PAYLOAD_MAX, as a
     * bound on len: a free's address adds at most TF_VARINT_MAX bytes to
     * the payload, whose length is one byte. */
    w->frees.room = start + 2 + TF_PY_FREES_PAYLOAD_MAX - TF_VARINT_MAX;
    w->frees.parent = e->parent;
    w->frees.ptr = e->u.host.ptr;
    w->frees.stacks = frees_stacks(e->native_stack, e->py_stack);
    w->frees.domain = e->u.host.domain;
    w->events++;
    w->last_seq = e->seq;
    w->last_t_ns = e->t_ns;
}

/* The open PY_ALLOCS_SPLIT record's streams into the room the chunk
 * keeps for them: count, extra, then the streams; and the record's
 * length, which the joins leave to this (nothing reads the chunk before
 * a seal, and one that turns two bytes long has its second byte). */
static void streams_put(tf_writer *w)
{
    if (!w->allocs.unput)
        return;
    w->allocs.unput = 0;
    uint8_t *data = w->chunk.data;
    size_t payload = w->allocs.end - w->allocs.payload;
    if (w->allocs.limit == TF_PY_ALLOCS_PAYLOAD_ONE) {
        data[w->allocs.start + 1] = (uint8_t)payload;
    } else {
        data[w->allocs.start + 1] = (uint8_t)(payload | 0x80);
        data[w->allocs.start + 2] = (uint8_t)(payload >> 7);
    }
    uint8_t *p = data + w->allocs.counts;
    const uint8_t *s = w->allocs.streams;
    size_t count = (size_t)(w->allocs.lead - s), extra = (size_t)(w->allocs.extra - (s + STREAM_CAP));
    size_t addr = (size_t)(w->allocs.addr - (s + 2 * STREAM_CAP));
    p[0] = (uint8_t)count;
    p[1] = (uint8_t)(count >> 8);
    p[2] = (uint8_t)extra;
    p[3] = (uint8_t)(extra >> 8);
    memcpy(p + 4, s, count);
    memcpy(p + 4 + count, s + STREAM_CAP, extra);
    memcpy(p + 4 + count + extra, s + 2 * STREAM_CAP, addr);
}

/* With TRACE_PY_ALLOCS=1 nearly every event is a py_alloc, and a loop's
 * repeat their thread, parent, stack and size: about 11 bytes before
 * compression each as py_alloc records (kind, length, presence map, time,
 * stack, domain, address, size), two to four in a PY_ALLOCS_SPLIT record,
 * which zstd then has less of to compress, and in streams it compresses
 * faster (FORMAT.md section 7).  The test is py_free_joins' (the chunk's
 * length says the record is open and last). */
static inline __attribute__((always_inline)) size_t py_alloc_joins(tf_writer *w, uint64_t seq, uint32_t tid,
                                                              uint64_t parent, uint64_t t_ns, uint32_t domain,
                                                              uint32_t native_stack, uint32_t py_stack, uint64_t ptr,
                                                              uint64_t size, uint32_t api)
{
    size_t len = w->chunk.len;
    uint64_t step = t_ns - w->last_t_ns;
    if (len != w->allocs.end || seq != w->last_seq + 1 || tid != w->b.tid || parent != w->allocs.parent ||
        domain != w->allocs.domain || native_stack)
        return 0;
    step = rotate_right(step * w->unit_inv, w->unit_shift);   /* in units, if whole (unit_qmax) */
    if (step > w->unit_qmax || reserve(w, TF_PY_ALLOCS_JOIN_MAX + 1) < 0)
        return 0;
    uint32_t cls = tf_py_allocs_class(size);
    uint8_t *extra = w->allocs.extra, *addr = w->allocs.addr;
    uint8_t code = tf_put_py_allocs_split(&extra, &addr, step, py_stack, w->allocs.py_stack, size, w->allocs.size,
                                          api, ptr - tf_py_allocs_guess_of(&w->allocs.guess, cls));
    len = w->allocs.len_less_ends + (uintptr_t)(w->allocs.lead + 1) + (uintptr_t)extra + (uintptr_t)addr;
    if (__builtin_expect(len > w->allocs.len_max, 0)) {   /* len - payload > limit */
        if (w->allocs.limit == TF_PY_ALLOCS_PAYLOAD_MAX)
            return 0;   /* the bytes written past the streams' ends are no part of them */
        /* Once per record: its length takes a second byte (the shortest
         * form, section 2), the payload one byte further on: the first
         * allocation and the room (whose bytes are not written yet). */
        uint8_t *data = w->chunk.data;
        memmove(data + w->allocs.payload + 1, data + w->allocs.payload, w->allocs.counts - w->allocs.payload);
        w->allocs.payload++;
        w->allocs.counts++;
        w->allocs.limit = TF_PY_ALLOCS_PAYLOAD_MAX;
        w->allocs.len_max = w->allocs.payload + TF_PY_ALLOCS_PAYLOAD_MAX;
        w->allocs.len_less_ends++;
        len++;
    }
    *w->allocs.lead++ = code;
    w->allocs.extra = extra;
    w->allocs.addr = addr;
    w->allocs.guess.last[cls] = ptr;
    w->chunk.len = w->allocs.end = len;
    w->last_t_ns = t_ns;
    w->allocs.size = size;
    w->allocs.py_stack = py_stack;
    w->events++;
    w->last_seq = seq;
    if (len == 0)
        __builtin_unreachable();   /* the record's bytes are in it: no caller need test for 0 */
    return len;   /* tf_writer_pending's */
}

/* An allocation's fields as py_alloc_joins takes them. */
static inline __attribute__((always_inline)) size_t py_alloc_joins_event(tf_writer *w, const tf_event *e)
{
    return py_alloc_joins(w, e->seq, e->tid, e->parent, e->t_ns, e->u.host.domain, e->native_stack, e->py_stack,
                          e->u.host.ptr, e->u.host.size, e->u.host.api);
}

size_t tf_write_py_allocs_join(tf_writer *w, uint64_t seq, uint32_t tid, uint64_t parent, uint64_t t_ns,
                               uint32_t domain, uint32_t py_stack, uint64_t ptr, uint64_t size, uint32_t api)
{
    return py_alloc_joins(w, seq, tid, parent, t_ns, domain, 0, py_stack, ptr, size, api);
}

void tf_write_py_allocs(tf_writer *w, const tf_event *e)
{
    if (py_alloc_joins_event(w, e))
        return;
    tf_write_py_allocs_rest(w, e);
}

void tf_write_py_allocs_rest(tf_writer *w, const tf_event *e)
{
    streams_put(w);
    if (!w->allocs.streams)
        w->allocs.streams = tf_pages_resize(NULL, 0, 3 * STREAM_CAP);
    if (e->native_stack || !w->allocs.streams) {
        write_event_as(w, e, TF_EV_PY_ALLOC);
        return;
    }
    if (reserve(w, FRAME_RECORD_MAX + 2 + TF_PY_ALLOCS_PAYLOAD_ONE) < 0)
        return;
    if (!w->frame_open)
        write_frame_record(w);
    size_t start = w->chunk.len;
    uint8_t *end = tf_put_py_allocs(&w->b, w->chunk.data + start, e, w->unit);
    w->chunk.data[start] = TF_EV_PY_ALLOCS_SPLIT;
    w->chunk.data[start + 1] += 4;   /* count and extra: the payload is below 128 bytes */
    w->allocs.counts = (size_t)(end - w->chunk.data);
    w->chunk.len = w->allocs.counts + 4;
    w->allocs.start = start;
    w->allocs.end = w->chunk.len;
    w->allocs.payload = start + 2;
    w->allocs.limit = TF_PY_ALLOCS_PAYLOAD_ONE;
    w->allocs.len_max = w->allocs.payload + TF_PY_ALLOCS_PAYLOAD_ONE;
    w->allocs.parent = e->parent;
    w->allocs.lead = w->allocs.streams;
    w->allocs.extra = w->allocs.streams + STREAM_CAP;
    w->allocs.addr = w->allocs.streams + 2 * STREAM_CAP;
    w->allocs.len_less_ends = w->chunk.len - (uintptr_t)w->allocs.lead - (uintptr_t)w->allocs.extra -
                              (uintptr_t)w->allocs.addr;
    w->allocs.unput = 1;
    tf_py_allocs_guess_start(&w->allocs.guess, e->u.host.ptr);
    w->last_t_ns = e->t_ns;
    w->allocs.size = e->u.host.size;
    w->allocs.py_stack = e->py_stack;
    w->allocs.domain = e->u.host.domain;
    w->events++;
    w->last_seq = e->seq;
}

tf_writer_mark tf_writer_get_mark(const tf_writer *w)
{
    return (tf_writer_mark){ w->frames_sealed, w->last_seq, w->last_t_ns, w->events, w->journal_len };
}

void tf_writer_rewind(tf_writer *w, const tf_writer_mark *m)
{
    w->chunk.len = 0;
    w->frame_open = 0;
    w->frames_sealed = m->frames_sealed;
    w->b.seq = w->last_seq = m->seq;
    w->b.t_ns = w->last_t_ns = m->t_ns;
    w->events = m->events;
    w->frees.end = FREES_SHUT;
    w->allocs.end = FREES_SHUT;
    w->allocs.unput = 0;   /* its room went with the chunk */
    if (m->journal <= w->journal_len)
        w->journal_len = m->journal;
}

void tf_chunk_free(tf_chunk *c)
{
    tf_pages_free(c->data, c->cap);
    *c = (tf_chunk){ 0 };
}

size_t tf_writer_pending(const tf_writer *w)
{
    return w->chunk.len;
}

void tf_writer_seal(tf_writer *w, tf_chunk *out)
{
    if (w->chunk.len == 0) {
        out->len = 0;
        return;
    }
    streams_put(w);
    w->b.t_ns = w->last_t_ns;   /* the next FRAME's: the last event's time */
    tf_chunk old = *out;
    *out = w->chunk;
    w->chunk = (tf_chunk){ old.data, 0, old.data ? old.cap : 0 };
    w->frames_sealed++;
    w->frame_open = 0;
    w->frees.end = FREES_SHUT;
    w->allocs.end = FREES_SHUT;
}
