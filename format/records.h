/*
 * records.h - an event record (FORMAT.md section 7), both ways: the one
 * codec of the 1.x event encoding, used by the writer (tf_write_event, and
 * tf_write_py_alloc with the kind a constant), the reader, and column
 * blocks (columns.c, which reads records to make a block and writes them
 * back out of one).
 *
 * Everything here is inlined once per event kind with a constant layout
 * (the TF_EVENT_KINDS switches): only unrolled does each field's encoding
 * become a constant, so that the encoding switches and the table reads go
 * away.  GCC does not unroll the field loops by itself; they are written
 * out.  This is the writer's and the reader's hot path.
 */
#ifndef TF_RECORDS_H
#define TF_RECORDS_H

#include <string.h>

#include "event_fields.h"

/* The delta bases of section 4: FRAME sets seq and t_ns, and zeroes tid and
 * the pointer classes; every event moves seq, t_ns and tid. */
typedef struct tf_bases {
    uint64_t seq, t_ns;
    uint32_t tid;
    uint64_t ptr[TF_PTR_CLASSES];
} tf_bases;

static inline void tf_bases_frame(tf_bases *b, uint64_t seq, uint64_t t_ns)
{
    b->seq = seq;
    b->t_ns = t_ns;
    b->tid = 0;
    memset(b->ptr, 0, sizeof b->ptr);
}

#define TF_ALWAYS_INLINE static inline __attribute__((always_inline))

/* ------------------------------------------------------------ writing */

TF_ALWAYS_INLINE uint8_t *tf_put_field(tf_bases *b, uint8_t *p, const tf_event *e, const tf_field *f,
                                       uint32_t *present, uint32_t bit)
{
    const uint8_t *src = (const uint8_t *)e + f->offset;
    uint32_t v32;
    uint64_t v64;
    switch (f->enc) {
    case TF_ENC_U32:
    case TF_ENC_S32:
        memcpy(&v32, src, 4);
        if (v32 == 0)
            return p;
        *present |= bit;
        return tf_put_uv(p, f->enc == TF_ENC_U32 ? v32 : tf_zigzag((int32_t)v32));
    case TF_ENC_PTR:
        memcpy(&v64, src, 8);
        if (v64 == 0)
            return p;
        *present |= bit;
        p = tf_put_uv(p, tf_zigzag((int64_t)(v64 - b->ptr[f->ptr_class])));
        b->ptr[f->ptr_class] = v64;
        return p;
    default: /* TF_ENC_U64, TF_ENC_SEQREL */
        memcpy(&v64, src, 8);
        if (v64 == 0)
            return p;
        *present |= bit;
        return tf_put_uv(p, f->enc == TF_ENC_U64 ? v64 : e->seq - v64);
    }
}

TF_ALWAYS_INLINE uint8_t *tf_put_common(const tf_bases *b, uint8_t *p, const tf_event *e, uint32_t *present)
{
    if (e->seq != b->seq + 1) {
        *present |= 1u << 0;
        p = tf_put_uv(p, e->seq - b->seq - 1);
    }
    if (e->tid != b->tid) {
        *present |= 1u << 1;
        p = tf_put_uv(p, e->tid);
    }
    if (e->t_ns != b->t_ns) {
        *present |= 1u << 2;
        p = tf_put_uv(p, tf_zigzag((int64_t)(e->t_ns - b->t_ns)));
    }
    if (e->parent) {
        *present |= 1u << 3;
        p = tf_put_uv(p, e->seq - e->parent);
    }
    if (e->native_stack) {
        *present |= 1u << 4;
        p = tf_put_uv(p, e->native_stack);
    }
    if (e->py_stack) {
        *present |= 1u << 5;
        p = tf_put_uv(p, e->py_stack);
    }
    return p;
}

TF_ALWAYS_INLINE uint8_t *tf_put_kind_fields(tf_bases *b, uint8_t *p, const tf_event *e,
                                             const tf_event_layout *layout, uint32_t *present)
{
#define TF_PUT_FIELD(i)                                                                         \
    if (i < layout->nfields)                                                                    \
        p = tf_put_field(b, p, e, &layout->fields[i], present, 1u << (TF_COMMON_FIELDS + i));
    TF_PUT_FIELD(0) TF_PUT_FIELD(1) TF_PUT_FIELD(2) TF_PUT_FIELD(3)
    TF_PUT_FIELD(4) TF_PUT_FIELD(5) TF_PUT_FIELD(6) TF_PUT_FIELD(7)
#undef TF_PUT_FIELD
    _Static_assert(TF_KIND_FIELDS_MAX == 8, "one TF_PUT_FIELD per possible field");
    return p;
}

/* An event record's kind, length and presence map, its fields being
 * written from rec + 4 up to end; the bases move to e.  Returns end. */
TF_ALWAYS_INLINE uint8_t *tf_put_record_end(tf_bases *b, uint8_t *rec, uint32_t kind, uint8_t *end,
                                            uint32_t present, const tf_event *e)
{
    rec[0] = (uint8_t)kind;
    rec[1] = (uint8_t)(end - (rec + 2));
    rec[2] = (uint8_t)present;
    rec[3] = (uint8_t)(present >> 8);
    b->seq = e->seq;
    b->t_ns = e->t_ns;
    b->tid = e->tid;
    return end;
}

/* The event record of e as an event of `kind` (e->kind, or a constant
 * for a caller that encodes one kind only: the switch then folds to that
 * kind's layout, the same table, so both ways write the same bytes). */
TF_ALWAYS_INLINE uint8_t *tf_put_event_as(tf_bases *b, uint8_t *rec, const tf_event *e, uint32_t kind)
{
    uint8_t *payload = rec + 2;
    uint32_t present = 0;
    uint8_t *p = tf_put_common(b, payload + 2, e, &present);
    switch (kind) {
#define TF_ENCODE(kind, layout) case kind: p = tf_put_kind_fields(b, p, e, &layout, &present); break;
    TF_EVENT_KINDS(TF_ENCODE)
#undef TF_ENCODE
    default: break;
    }
    return tf_put_record_end(b, rec, kind, p, present, e);
}

/* The event record of e (a kind this version defines) at rec: kind,
 * length, presence map, fields.  Returns its end; moves the bases.  The
 * kind fits one byte, the payload never exceeds TF_EVENT_PAYLOAD_MAX (< 128)
 * so the length does too, and the presence map is a fixed two bytes filled
 * in last: the record is encoded in place, at most 2 + TF_EVENT_PAYLOAD_MAX
 * bytes. */
static inline uint8_t *tf_put_event(tf_bases *b, uint8_t *rec, const tf_event *e)
{
    return tf_put_event_as(b, rec, e, e->kind);
}

/* ------------------------------------------------------------ PY_FREES (2.3) */

/* A PY_FREES record (FORMAT.md section 7): py_free events of consecutive
 * seqs that share every other common field and their domain.  The payload
 * is the first one's as an event record would hold it (presence map,
 * common fields, `domain` at bit 6), then the blocks' addresses: the
 * first as a uv, each later one as an sv from the one before, up to the
 * payload's end.  The bases move as the first event moves them: a reader
 * that skips the kind (2.2) keeps them right, and the event after the
 * record writes its seq as a gap from the first. */
#define TF_PY_FREES_PAYLOAD_MAX 127   /* the length prefix stays one byte */
#define TF_PY_FREES_DOMAIN_BIT (1u << TF_COMMON_FIELDS)

static inline uint8_t *tf_put_py_frees(tf_bases *b, uint8_t *rec, const tf_event *e)
{
    uint8_t *payload = rec + 2;
    uint32_t present = 0;
    uint8_t *p = tf_put_common(b, payload + 2, e, &present);
    if (e->u.host.domain) {
        present |= TF_PY_FREES_DOMAIN_BIT;
        p = tf_put_uv(p, e->u.host.domain);
    }
    p = tf_put_uv(p, e->u.host.ptr);
    return tf_put_record_end(b, rec, TF_EV_PY_FREES, p, present, e);
}

/* ------------------------------------------------------------ PY_ALLOCS (2.7) */

/* The writer writes PY_ALLOCS_SPLIT (2.8, below) since 2.8; readers read
 * both.  tf_put_py_allocs also writes PY_ALLOCS_SPLIT's first allocation,
 * and tf_put_py_allocs_join is kept for the tests' 2.7 logs. */

/* A PY_ALLOCS record (FORMAT.md section 7): py_alloc events of consecutive
 * seqs that share their thread, parent, native stack and domain; each
 * keeps its own time, Python stack, address, size and api.  The payload is
 * the first one's as a py_alloc record would hold it, less its address
 * (presence map, common fields, then `domain`, `size`, `api` at bits 6 to
 * 8), then the time unit of the steps below as a uv and the first address
 * as a uv; then, up to the payload's end, each later allocation: a lead
 * byte, the fields it says, and its address as an sv from the one before.
 * The lead byte: bits 0-2 its time's step from the allocation before, in
 * units, 7 meaning a uv of the step follows; bit 3 an sv of its Python
 * stack id's difference from the one before follows (else the same);
 * bit 4 a uv of its size follows (else the same); bit 5 a uv of its api
 * follows (else 0); bit 6 the address's difference below is in bytes
 * (else in 16-byte units, the allocators' alignment: a block 64 bytes on
 * is then one byte, not two); bit 7 zero.  A loop's allocations take two
 * or three bytes each.  The bases move as the first event moves them, as for
 * PY_FREES, and no ptr base is read or moved: a reader that skips the kind
 * (2.6) keeps them right. */
/* A run is as long as its allocations (a collection, say, ends it), up to
 * a two-byte length: one byte would end a record every 25 or so, and its
 * first allocation (about 20 bytes: kind, length, presence map, time, stack,
 * the address whole) was then a fifth of the bytes. */
#define TF_PY_ALLOCS_PAYLOAD_ONE 127      /* the most a one-byte length says */
#define TF_PY_ALLOCS_PAYLOAD_MAX 16383    /* the most a two-byte length says */
#define TF_PY_ALLOCS_DOMAIN_BIT (1u << TF_COMMON_FIELDS)
#define TF_PY_ALLOCS_SIZE_BIT (1u << (TF_COMMON_FIELDS + 1))
#define TF_PY_ALLOCS_API_BIT (1u << (TF_COMMON_FIELDS + 2))
#define TF_PY_ALLOCS_STEP_ESC 7u      /* lead bits 0-2: a uv step follows */
#define TF_PY_ALLOCS_STACK 0x08u      /* lead: a stack difference follows */
#define TF_PY_ALLOCS_SIZE 0x10u       /* lead: a size follows */
#define TF_PY_ALLOCS_API 0x20u        /* lead: an api follows */
#define TF_PY_ALLOCS_BYTES 0x40u      /* lead: the address's difference is in bytes, not 16s */
/* The most bytes one joined allocation takes. */
#define TF_PY_ALLOCS_JOIN_MAX (1 + TF_VARINT_MAX + 5 + TF_VARINT_MAX + 5 + TF_VARINT_MAX)

static inline uint8_t *tf_put_py_allocs(tf_bases *b, uint8_t *rec, const tf_event *e, uint64_t unit)
{
    uint8_t *payload = rec + 2;
    uint32_t present = 0;
    uint8_t *p = tf_put_common(b, payload + 2, e, &present);
    if (e->u.host.domain) {
        present |= TF_PY_ALLOCS_DOMAIN_BIT;
        p = tf_put_uv(p, e->u.host.domain);
    }
    if (e->u.host.size) {
        present |= TF_PY_ALLOCS_SIZE_BIT;
        p = tf_put_uv(p, e->u.host.size);
    }
    if (e->u.host.api) {
        present |= TF_PY_ALLOCS_API_BIT;
        p = tf_put_uv(p, e->u.host.api);
    }
    p = tf_put_uv(p, unit);
    p = tf_put_uv(p, e->u.host.ptr);
    return tf_put_record_end(b, rec, TF_EV_PY_ALLOCS, p, present, e);
}

/* One joined allocation at p: step is its time's difference from the one
 * before in units; the others are the previous allocation's stack, size
 * and address.  Returns the end. */
TF_ALWAYS_INLINE uint8_t *tf_put_py_allocs_join(uint8_t *p, uint64_t step, uint32_t py_stack, uint32_t prev_stack,
                                                uint64_t size, uint64_t prev_size, uint32_t api, uint64_t ptr,
                                                uint64_t prev_ptr)
{
    uint8_t *lead = p++;
    uint32_t code = (uint32_t)step;
    if (step >= TF_PY_ALLOCS_STEP_ESC) {
        code = TF_PY_ALLOCS_STEP_ESC;
        p = tf_put_uv(p, step);
    }
    if (py_stack != prev_stack) {
        code |= TF_PY_ALLOCS_STACK;
        p = tf_put_uv(p, tf_zigzag((int64_t)py_stack - (int64_t)prev_stack));
    }
    if (size != prev_size) {
        code |= TF_PY_ALLOCS_SIZE;
        p = tf_put_uv(p, size);
    }
    if (api) {
        code |= TF_PY_ALLOCS_API;
        p = tf_put_uv(p, api);
    }
    uint64_t d = ptr - prev_ptr;
    if (d & 15) {
        code |= TF_PY_ALLOCS_BYTES;
        p = tf_put_uv(p, tf_zigzag((int64_t)d));
    } else {
        p = tf_put_uv(p, tf_zigzag((int64_t)d >> 4));
    }
    *lead = (uint8_t)code;
    return p;
}

/* ------------------------------------------------------------ PY_ALLOCS_SPLIT (2.8) */

/* A PY_ALLOCS_SPLIT record (FORMAT.md section 7): the allocations of a
 * PY_ALLOCS record, laid out as three streams, and each address guessed
 * from the last allocation of its size class.  The payload is a PY_ALLOCS
 * payload's first allocation (presence map to the first address, the same
 * bytes), then `count` (u16, the later allocations) and `extra` (u16, the
 * length of the middle stream); then count lead bytes, as in PY_ALLOCS;
 * then `extra` bytes of the fields the leads say (step, stack, size, api,
 * in that order for each allocation, allocation after allocation); then the
 * addresses, one sv each, to the payload's end.  An address is written as
 * its difference (in 16s, or in bytes where the lead's bit 6 says) from a
 * guess: the address of the record's last allocation of the same class
 * (its size rounded up to 16, for sizes 1 to 512: CPython's small-object
 * allocator hands a class's blocks out of one pool, one after the other)
 * plus that rounded size.  Class 0 holds the other sizes (0, above 512),
 * its guess the last such address; every class's last address is the
 * first allocation's at the record's start.
 *
 * Why: zstd level 1 on the flusher thread was the largest single cost of
 * TRACE_PY_ALLOCS=1 (churn_cycles: ~145 instructions an event), and the
 * interleaved lead/field/address bytes of PY_ALLOCS gave it short matches
 * only.  Split, the leads repeat in long runs, and the guessed addresses
 * are mostly 0 or a few values that repeat: an offline re-encoding of a
 * churn_cycles 0.3 log (1.07M allocations) went from 2.12 to 0.63 bytes an
 * allocation compressed and from 195M to 73M instructions in
 * ZSTD_compress2; json_work 1.88 to 1.40 bytes, 72M to 46M. */
#define TF_PY_ALLOCS_CLASSES 32          /* size classes 1..32: sizes 1..512 */

/* An allocation's size class: 1 to 32, 0 for the other sizes. */
TF_ALWAYS_INLINE uint32_t tf_py_allocs_class(uint64_t size)
{
    return size - 1 < 16 * TF_PY_ALLOCS_CLASSES ? (uint32_t)((size + 15) >> 4) : 0;
}

/* What writer and reader both keep of a record's allocations so far: the
 * last address of each class, every one the first allocation's at the
 * start.  (A guess from the previous allocation where the class had none
 * yet took a bit per class to say so: 20 instructions an allocation in
 * the writer against 8, and no fewer bytes: churn_cycles 0.3, 0.636 and
 * 0.632 bytes an allocation compressed.) */
typedef struct tf_py_allocs_guess {
    uint64_t last[TF_PY_ALLOCS_CLASSES + 2];   /* one spare: an even count */
} tf_py_allocs_guess;

/* 17 16-byte stores, unrolled: as a loop of 33 it was 133 instructions a
 * record, 1.4M of json_work 0.1's (10,350 records of 18 allocations). */
TF_ALWAYS_INLINE void tf_py_allocs_guess_start(tf_py_allocs_guess *g, uint64_t ptr)
{
#pragma GCC unroll 34
    for (int c = 0; c < TF_PY_ALLOCS_CLASSES + 2; c++)
        g->last[c] = ptr;
}

/* The guess for an allocation of class c: the class's last block plus
 * its size (class 0: the last one of no class). */
TF_ALWAYS_INLINE uint64_t tf_py_allocs_guess_of(const tf_py_allocs_guess *g, uint32_t c)
{
    return g->last[c] + ((uint64_t)c << 4);
}

/* One allocation of a PY_ALLOCS_SPLIT record: its lead byte is returned,
 * its fields written at *extra and its address's difference from its
 * guess (tf_py_allocs_guess_of), d, at *addr (both moved). */
TF_ALWAYS_INLINE uint8_t tf_put_py_allocs_split(uint8_t **extra, uint8_t **addr, uint64_t step, uint32_t py_stack,
                                                uint32_t prev_stack, uint64_t size, uint64_t prev_size, uint32_t api,
                                                uint64_t d)
{
    uint8_t *p = *extra;
    uint32_t code = (uint32_t)step;
    if (step >= TF_PY_ALLOCS_STEP_ESC) {
        code = TF_PY_ALLOCS_STEP_ESC;
        p = tf_put_uv(p, step);
    }
    if (py_stack != prev_stack) {
        code |= TF_PY_ALLOCS_STACK;
        p = tf_put_uv(p, tf_zigzag((int64_t)py_stack - (int64_t)prev_stack));
    }
    if (size != prev_size) {
        code |= TF_PY_ALLOCS_SIZE;
        p = tf_put_uv(p, size);
    }
    if (api) {
        code |= TF_PY_ALLOCS_API;
        p = tf_put_uv(p, api);
    }
    *extra = p;
    if (d & 15) {
        code |= TF_PY_ALLOCS_BYTES;
        *addr = tf_put_uv(*addr, tf_zigzag((int64_t)d));
    } else {
        *addr = tf_put_uv(*addr, tf_zigzag((int64_t)d >> 4));
    }
    return (uint8_t)code;
}

/* ------------------------------------------------------------ reading */

TF_ALWAYS_INLINE void tf_get_field(tf_bases *b, tf_cursor *c, tf_event *e, const tf_field *f)
{
    uint8_t *dst = (uint8_t *)e + f->offset;
    uint64_t v = tf_get_uv_fast(c);
    uint32_t v32;
    switch (f->enc) {
    case TF_ENC_U32:
        if (v > UINT32_MAX)
            c->bad = 1;
        v32 = (uint32_t)v;
        memcpy(dst, &v32, 4);
        return;
    case TF_ENC_S32: {
        int64_t s = tf_unzigzag(v);
        if (s < INT32_MIN || s > INT32_MAX)
            c->bad = 1;
        int32_t s32 = (int32_t)s;
        memcpy(dst, &s32, 4);
        return;
    }
    case TF_ENC_PTR:
        v = b->ptr[f->ptr_class] += (uint64_t)tf_unzigzag(v);
        break;
    case TF_ENC_SEQREL:
        v = e->seq - v;
        break;
    default:
        break;
    }
    memcpy(dst, &v, 8);
}

TF_ALWAYS_INLINE void tf_get_common(const tf_bases *b, tf_cursor *c, uint32_t present, tf_event *e)
{
    e->seq = b->seq + 1 + (present & 1 ? tf_get_uv_fast(c) : 0);
    e->tid = present & 2 ? tf_get_u32_fast(c) : b->tid;
    e->t_ns = b->t_ns + (present & 4 ? (uint64_t)tf_unzigzag(tf_get_uv_fast(c)) : 0);
    e->parent = present & 8 ? e->seq - tf_get_uv_fast(c) : 0;
    e->native_stack = present & 16 ? tf_get_u32_fast(c) : 0;
    e->py_stack = present & 32 ? tf_get_u32_fast(c) : 0;
}

TF_ALWAYS_INLINE void tf_get_kind_fields(tf_bases *b, tf_cursor *c, tf_event *e, uint32_t present,
                                         const tf_event_layout *layout)
{
#define TF_GET_FIELD(i)                                                                         \
    if (i < layout->nfields && (present >> (TF_COMMON_FIELDS + i) & 1))                        \
        tf_get_field(b, c, e, &layout->fields[i]);
    TF_GET_FIELD(0) TF_GET_FIELD(1) TF_GET_FIELD(2) TF_GET_FIELD(3)
    TF_GET_FIELD(4) TF_GET_FIELD(5) TF_GET_FIELD(6) TF_GET_FIELD(7)
#undef TF_GET_FIELD
    _Static_assert(TF_KIND_FIELDS_MAX == 8, "one TF_GET_FIELD per possible field");
}

/* Decodes an event record's payload into e (zeroed first, padding too).
 * 1: an event of a kind this version defines; 0: a kind it does not know
 * (its common fields still move the bases: section 9); -1: invalid.  Bytes
 * and presence bits past the known fields are ignored (section 3). */
TF_ALWAYS_INLINE int tf_get_event(tf_bases *b, uint32_t kind, tf_cursor *c, tf_event *e)
{
    tf_event_init(e, kind);
    if (c->end - c->p < 2)
        return -1;
    uint32_t present = (uint32_t)c->p[0] | (uint32_t)c->p[1] << 8;
    c->p += 2;
    tf_get_common(b, c, present, e);
    int known = 1;
    switch (kind) {
#define TF_DECODE(kind, layout) case kind: tf_get_kind_fields(b, c, e, present, &layout); break;
    TF_EVENT_KINDS(TF_DECODE)
#undef TF_DECODE
    default: known = 0;
    }
    if (c->bad)
        return -1;
    b->seq = e->seq;
    b->t_ns = e->t_ns;
    b->tid = e->tid;
    return known;
}

/* The first py_free of a PY_FREES payload into e; c is left at the next
 * address, if any (tf_get_py_frees_next).  1, or -1: invalid, which a
 * presence bit past `domain` makes too (the addresses follow the fields,
 * so the kind cannot gain any). */
TF_ALWAYS_INLINE int tf_get_py_frees(tf_bases *b, tf_cursor *c, tf_event *e)
{
    tf_event_init(e, TF_EV_PY_FREE);
    if (c->end - c->p < 2)
        return -1;
    uint32_t present = (uint32_t)c->p[0] | (uint32_t)c->p[1] << 8;
    c->p += 2;
    if (present >> (TF_COMMON_FIELDS + 1))
        return -1;
    tf_get_common(b, c, present, e);
    if (present & TF_PY_FREES_DOMAIN_BIT)
        e->u.host.domain = tf_get_u32_fast(c);
    e->u.host.ptr = tf_get_uv_fast(c);
    if (c->bad)
        return -1;
    b->seq = e->seq;
    b->t_ns = e->t_ns;
    b->tid = e->tid;
    return 1;
}

/* The py_free after `prev` in the same record: 1, 0 at the payload's end,
 * -1 invalid. */
static inline int tf_get_py_frees_next(tf_cursor *c, const tf_event *prev, tf_event *e)
{
    if (c->p >= c->end)
        return 0;
    uint64_t d = tf_get_uv_fast(c);
    if (c->bad)
        return -1;
    *e = *prev;
    e->flags = 0;
    e->seq = prev->seq + 1;
    e->u.host.ptr = prev->u.host.ptr + (uint64_t)tf_unzigzag(d);
    return 1;
}

/* The first py_alloc of a PY_ALLOCS payload into e, and the record's time
 * unit into *unit; c is left at the next allocation, if any
 * (tf_get_py_allocs_next).  1, or -1: invalid, which a presence bit past
 * `api` makes too (the allocations follow the fields, so the kind cannot
 * gain any), and a unit of 0. */
TF_ALWAYS_INLINE int tf_get_py_allocs(tf_bases *b, tf_cursor *c, tf_event *e, uint64_t *unit)
{
    tf_event_init(e, TF_EV_PY_ALLOC);
    if (c->end - c->p < 2)
        return -1;
    uint32_t present = (uint32_t)c->p[0] | (uint32_t)c->p[1] << 8;
    c->p += 2;
    if (present >> (TF_COMMON_FIELDS + 3))
        return -1;
    tf_get_common(b, c, present, e);
    if (present & TF_PY_ALLOCS_DOMAIN_BIT)
        e->u.host.domain = tf_get_u32_fast(c);
    if (present & TF_PY_ALLOCS_SIZE_BIT)
        e->u.host.size = tf_get_uv_fast(c);
    if (present & TF_PY_ALLOCS_API_BIT)
        e->u.host.api = tf_get_u32_fast(c);
    *unit = tf_get_uv_fast(c);
    e->u.host.ptr = tf_get_uv_fast(c);
    if (c->bad || *unit == 0)
        return -1;
    b->seq = e->seq;
    b->t_ns = e->t_ns;
    b->tid = e->tid;
    return 1;
}

/* The py_alloc after `prev` in the same record: 1, 0 at the payload's end,
 * -1 invalid. */
static inline int tf_get_py_allocs_next(tf_cursor *c, const tf_event *prev, uint64_t unit, tf_event *e)
{
    if (c->p >= c->end)
        return 0;
    uint32_t lead = *c->p++;
    if (lead & 0x80)
        return -1;
    *e = *prev;
    e->flags = 0;
    e->seq = prev->seq + 1;
    uint64_t step = lead & TF_PY_ALLOCS_STEP_ESC;
    if (step == TF_PY_ALLOCS_STEP_ESC)
        step = tf_get_uv_fast(c);
    e->t_ns = prev->t_ns + step * unit;
    if (lead & TF_PY_ALLOCS_STACK)
        e->py_stack = (uint32_t)(prev->py_stack + (uint64_t)tf_unzigzag(tf_get_uv_fast(c)));   /* mod 2^32 */
    if (lead & TF_PY_ALLOCS_SIZE)
        e->u.host.size = tf_get_uv_fast(c);
    e->u.host.api = lead & TF_PY_ALLOCS_API ? tf_get_u32_fast(c) : 0;
    uint64_t d = (uint64_t)tf_unzigzag(tf_get_uv_fast(c));
    e->u.host.ptr = prev->u.host.ptr + (lead & TF_PY_ALLOCS_BYTES ? d : d << 4);
    return c->bad ? -1 : 1;
}

/* The rest of a PY_ALLOCS_SPLIT record after its first allocation. */
typedef struct tf_py_allocs_run {
    const uint8_t *lead, *lead_end;
    tf_cursor extra, addr;
    uint64_t unit;
    tf_py_allocs_guess guess;
} tf_py_allocs_run;

/* The first py_alloc of a PY_ALLOCS_SPLIT payload into e, and the rest
 * into *run: 1, or -1 invalid (as tf_get_py_allocs, and streams that run
 * past the payload). */
TF_ALWAYS_INLINE int tf_get_py_allocs_split(tf_bases *b, tf_cursor *c, tf_event *e, tf_py_allocs_run *run)
{
    if (tf_get_py_allocs(b, c, e, &run->unit) < 0)
        return -1;
    if (c->end - c->p < 4)
        return -1;
    size_t count = (size_t)c->p[0] | (size_t)c->p[1] << 8, extra = (size_t)c->p[2] | (size_t)c->p[3] << 8;
    const uint8_t *p = c->p + 4;
    if ((size_t)(c->end - p) < count + extra)
        return -1;
    run->lead = p;
    run->lead_end = p + count;
    run->extra = (tf_cursor){ p + count, p + count + extra, 0 };
    run->addr = (tf_cursor){ p + count + extra, c->end, 0 };
    tf_py_allocs_guess_start(&run->guess, e->u.host.ptr);
    return 1;
}

/* The py_alloc after `prev` in a PY_ALLOCS_SPLIT record: 1, 0 at its
 * end, -1 invalid (a field past its stream, bytes left in one at the
 * end). */
static inline int tf_get_py_allocs_split_next(tf_py_allocs_run *run, const tf_event *prev, tf_event *e)
{
    if (run->lead == run->lead_end)
        return run->extra.p == run->extra.end && run->addr.p == run->addr.end ? 0 : -1;
    uint32_t lead = *run->lead++;
    if (lead & 0x80)
        return -1;
    tf_cursor *c = &run->extra;
    *e = *prev;
    e->flags = 0;
    e->seq = prev->seq + 1;
    uint64_t step = lead & TF_PY_ALLOCS_STEP_ESC;
    if (step == TF_PY_ALLOCS_STEP_ESC)
        step = tf_get_uv_fast(c);
    e->t_ns = prev->t_ns + step * run->unit;
    if (lead & TF_PY_ALLOCS_STACK)
        e->py_stack = (uint32_t)(prev->py_stack + (uint64_t)tf_unzigzag(tf_get_uv_fast(c)));   /* mod 2^32 */
    if (lead & TF_PY_ALLOCS_SIZE)
        e->u.host.size = tf_get_uv_fast(c);
    e->u.host.api = lead & TF_PY_ALLOCS_API ? tf_get_u32_fast(c) : 0;
    uint64_t d = (uint64_t)tf_unzigzag(tf_get_uv_fast(&run->addr));
    uint32_t cls = tf_py_allocs_class(e->u.host.size);
    e->u.host.ptr = tf_py_allocs_guess_of(&run->guess, cls) + (lead & TF_PY_ALLOCS_BYTES ? d : d << 4);
    run->guess.last[cls] = e->u.host.ptr;
    return c->bad || run->addr.bad ? -1 : 1;
}

#endif
