/*
 * columns.c - column blocks (columns.h, FORMAT.md section 15).
 *
 * code_event() is the whole format of an event in a block: it runs once per
 * event in either direction.  Encoding, the event is given and each token is
 * computed from it and appended to its column; decoding, each token is read
 * from its column and the event is rebuilt from it.  Every value goes
 * through the same line in both directions (sym()), so what the encoder
 * predicts is by construction what the decoder predicts.
 *
 * The records a block stands for are 1.x records (FORMAT.md sections 3-7):
 * the encoder reads them, and the decoder writes them, with the writer's
 * and the reader's own codec (records.h).
 *
 * Speed (session 47, format_bench.sh encode|decode, Xeon model 207): the
 * coder runs about 870 instructions per event encoding (a quarter of them
 * the records' parse) and 700 decoding, in about 50 and 39 ns: the bench's
 * branches are predicted well, and changes that traded instructions or
 * code size for fewer branches or cache misses lost.  Each of these cost
 * 0.5 to 7 ns per event there, and stays out: one code_event per kind
 * with update() inlined (parse and coder under one switch), branch-free
 * put() and tf_get_uv (8-byte stores and loads), SSE2 shifts in mtf_push,
 * rankset hash entries carrying their home, thread entries aligned to
 * cache lines, prefetching the rankset's hash, and a branch-free rank for
 * the ring's last two words.
 *
 * Session 49 (same bench, side by side with the code before, CPU 0 of a
 * shared 2-core VM): encoding 853 -> 794 instructions and about 49 -> 45.5
 * ns per event, most of the ns from the records' varints read unrolled
 * (records.h).  Fewer instructions that cost time there, and stay out:
 * encode_event inlined into encode_once (-34 instructions, +0.4 ns), the
 * presence check of read_event folded into tf_get_event's switch on the
 * kind (-10, +0.8 ns), varints read without a room test from a
 * zero-padded copy of the chunk's last records (-15, +0.5 ns); and the
 * record count in encode_once a local (GCC then spilled the parse's
 * registers: +27 instructions, +4 ns).
 *
 * Session 52 (callgrind, format-bench encode|decode 300000 1): encoding
 * 793 -> 744 instructions per event, decoding 631 -> 589, from stack lists
 * that slide down a room (columns.h), the thread's rank passed to update,
 * the parse's layout from a table and the rank sets' memo checked inline;
 * CPU time on a shared 2-core AMD EPYC VM (format_bench.sh, six
 * alternations with the code before, load 5 to 6): column encoding 51.4
 * -> 48.8 ns, decoding 44.1 -> 43.4.  Where the 744 go: the records' parse
 * ~225 (varints ~110 of it: records.h, shared with the reader), the coder
 * itself ~295, update ~125, the rank sets' calls ~110 (a rank ~50, two
 * adds ~40, a removal ~20).  The 589: the per-record loop ~45, the coder
 * ~320 (its tokens' reads ~100 of it), update with its adds and removals
 * ~165, the address of a rank ~35.  Goal 5's 2.5 to 3 times fewer is in
 * no one of them.
 */
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "columns.h"
#include "event_fields.h"
#include "pages.h"
#include "records.h"
#include "trace_format.h"
#include "varint.h"

#define NKINDS 17           /* event kinds 32..48 */

const char *tf_column_name(unsigned col)
{
    static const char *const names[] = {
#define TF_COLUMN_NAME(id, name) name,
        TF_COLUMN_LIST(TF_COLUMN_NAME)
#undef TF_COLUMN_NAME
    };
    return col < TF_COLUMNS ? names[col] : "?";
}

/* Each event kind's layout (NULL: one this version does not know), for
 * the encoder's parse (read_event): a load where tf_event_layout_of is a
 * switch, which GCC makes an indirect jump (it builds no table of addresses
 * in position-independent code).  code_event and decode_block keep the
 * switch: GCC threads it into the switch on the kind that follows (the
 * coders', tf_event_init's), and there the table cost 3 instructions per
 * event decoding. */
static const tf_event_layout *const kind_layout[NKINDS] = {
#define KIND_LAYOUT(kind, layout) [kind - 32] = &layout,
    TF_EVENT_KINDS(KIND_LAYOUT)
#undef KIND_LAYOUT
};

static inline const tf_event_layout *layout_of(uint64_t kind)
{
    return kind - 32 < NKINDS ? kind_layout[kind - 32] : NULL;
}

/* ------------------------------------------------------------ token i/o */

/* The token functions are small and called several times per field: they
 * must inline (about a third of the encoder's time went to calls). */
#define INLINE static inline __attribute__((always_inline))

typedef struct col_io {
    int bad;                        /* fail() was called, or a column could not grow */
    const char *why;
    tf_colenc *enc;                 /* encoding: the columns written */
    /* encoding: where each column's next byte goes (its len is brought up
     * to date only when it grows and at the end: put() then loads and
     * stores one pointer, where through enc each byte stored made the
     * compiler load the column's data and len again) */
    uint8_t *w[TF_COLUMNS];
    size_t room;                    /* encoding: bytes every column can take without growing */
    tf_cursor in[TF_COLUMNS];       /* decoding: the columns read */
    /* the allocation being coded took this much room from the freed set */
    int took;
    uint64_t whole;
    int off_unit;                   /* encoding failed on a time step that is not whole units */
    /* where each of the event's stack ids is in its thread's list (for
     * update, which would search again): an index, or TF_COL_MTF when not */
    uint32_t mtf_at[2];
    /* the event's thread's rank in the order (0: it has no entry), found
     * by code_common for update, which searched again */
    uint32_t th_rank;
} col_io;

/* The most one record adds to any one column: a column takes at most one
 * token per field of a kind and two more (TF_KIND_FIELDS_MAX + 2, at most
 * TF_VARINT_MAX bytes each), and a definition's bytes are counted apart.
 * The encoder makes this much room in every column before each record, so
 * that put() checks nothing. */
#define RECORD_ROOM 128
_Static_assert((TF_KIND_FIELDS_MAX + 2) * TF_VARINT_MAX <= RECORD_ROOM, "a record's tokens fit");

/* Each column's len from its write pointer (none yet: len stays). */
static void sync_lens(col_io *io)
{
    for (unsigned c = 0; c < TF_COLUMNS; c++)
        if (io->w[c])
            io->enc->col[c].len = (size_t)(io->w[c] - io->enc->col[c].data);
}

static __attribute__((noinline)) int make_room(col_io *io)
{
    tf_colenc *e = io->enc;
    sync_lens(io);
    io->room = SIZE_MAX;
    for (unsigned c = 0; c < TF_COLUMNS; c++) {
        if (tf_pages_reserve(&e->col[c].data, &e->col[c].cap, e->col[c].len, 32 * RECORD_ROOM,
                             16384) < 0) {
            io->bad = 1;
            return -1;
        }
        io->w[c] = e->col[c].data + e->col[c].len;
        if (e->col[c].cap - e->col[c].len < io->room)
            io->room = e->col[c].cap - e->col[c].len;
    }
    return 0;
}

/* Before each record: room for it in every column (a fresh look at each
 * column's room only every few dozen records). */
static inline int room_for_record(col_io *io)
{
    if (io->room < RECORD_ROOM && make_room(io) < 0)
        return -1;
    io->room -= RECORD_ROOM;
    return 0;
}

INLINE void put(col_io *io, unsigned col, uint64_t v)
{
    uint8_t *p = io->w[col];
    if (v < 0x80) {
        *p = (uint8_t)v;
        io->w[col] = p + 1;
        return;
    }
    io->w[col] = tf_put_uv(p, v);
}

static __attribute__((noinline)) uint64_t get_long(tf_cursor *c)
{
    return tf_get_uv(c);
}

/* A column that ends early reads as zeros and leaves its cursor bad: the
 * decoder checks the cursors once per block (and the kinds' at each record,
 * which bounds the records read), not at every token.  Tokens of one and
 * two bytes are read inline (two: a rank among a few hundred blocks, a
 * size's residual), longer ones out of line: tf_get_uv's loop inlined at
 * every token was a fifth of the decoder's instructions. */
INLINE uint64_t get(col_io *io, unsigned col)
{
    tf_cursor *c = &io->in[col];
    const uint8_t *p = c->p;
    if (p < c->end && *p < 0x80) {
        c->p = p + 1;
        return *p;
    }
    if (c->end - p >= 2 && p[1] < 0x80) {
        c->p = p + 2;
        return (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
    }
    return get_long(c);
}

/* One token, either way: written from *v, or read into it. */
INLINE void sym(col_io *io, const int dec, unsigned col, uint64_t *v)
{
    if (dec)
        *v = get(io, col);
    else
        put(io, col, *v);
}

static void fail(col_io *io, const char *why)
{
    if (!io->bad) {
        io->bad = 1;
        io->why = why;
    }
}

/* Whether the field of presence bit `bit` is written: encoding, when the
 * value differs from the prediction (the bit is set); decoding, the bit.
 * The map is code_event's local, not col_io's: in col_io, each bit set was
 * a load and a store, and each test after a token was stored a load again
 * (a column's bytes may alias anything, for all the compiler knows). */
INLINE int here(uint32_t *pres, const int dec, unsigned bit, uint64_t v, uint64_t pred)
{
    if (dec)
        return *pres >> bit & 1;
    if (v == pred)
        return 0;
    *pres |= 1u << bit;
    return 1;
}

/* A value as its signed difference from the prediction.  Encoding, the
 * value is v: rebuilt from z, it was (GCC does not see that unzigzag
 * undoes zigzag), at every residual of every event. */
INLINE uint64_t residual(col_io *io, const int dec, unsigned col, uint64_t v, uint64_t pred)
{
    uint64_t z = tf_zigzag((int64_t)(v - pred));
    sym(io, dec, col, &z);
    return dec ? pred + (uint64_t)tf_unzigzag(z) : v;
}

/* ------------------------------------------------------------ threads */

static tf_col_thread *thread_search(tf_colstate *st, uint32_t tid, uint32_t *rank)
{
    for (uint32_t i = 1; i < st->nthreads; i++)
        if (st->thread[st->order[i]].tid == tid) {
            if (rank)
                *rank = i + 1;
            return &st->thread[st->order[i]];
        }
    return NULL;
}

/* The thread's entry and its rank (1: the most recent), or NULL.  Most
 * events are the previous one's thread, the most recent: that one is
 * looked at inline, the others searched (the loop and its indirection were
 * 3.5% of the encoder's instructions). */
INLINE tf_col_thread *thread_find(tf_colstate *st, uint32_t tid, uint32_t *rank)
{
    if (!st->nthreads)
        return NULL;
    tf_col_thread *th = &st->thread[st->order[0]];
    if (th->tid == tid) {
        if (rank)
            *rank = 1;
        return th;
    }
    return thread_search(st, tid, rank);
}

/* Puts slot in front of the order, the first i entries moving down one.
 * Most moves are short (a thread that ran a moment ago): those are one
 * 8-byte shift, where memmove was a call (a twentieth of update's
 * instructions on format_bench's stream). */
static inline void order_to_front(uint8_t *order, uint32_t i, uint8_t slot)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (i < 8) {
        uint64_t x, stay = ~0ull << (8 * i) << 8;   /* the bytes past i */
        memcpy(&x, order, 8);
        x = (x & stay) | (x << 8 & ~stay) | slot;   /* the low byte is order[0] */
        memcpy(order, &x, 8);
        return;
    }
#endif
    memmove(order + 1, order, i);
    order[0] = slot;
}

/* The thread's entry, made the most recent (made, evicting the least
 * recent, when it has none): rank is where code_common found it (0: it has
 * none). */
INLINE tf_col_thread *thread_touch(tf_colstate *st, uint32_t tid, uint32_t rank)
{
    if (rank == 1)
        return &st->thread[st->order[0]];   /* most events: the previous one's thread */
    tf_col_thread *th;
    uint8_t slot;
    if (rank) {
        slot = st->order[rank - 1];
        order_to_front(st->order, rank - 1, slot);
        th = &st->thread[slot];
    } else {
        if (st->nthreads < TF_COL_THREADS) {
            slot = (uint8_t)st->nthreads++;
        } else {
            slot = st->order[TF_COL_THREADS - 1];
        }
        order_to_front(st->order, st->nthreads - 1, slot);
        th = &st->thread[slot];
        memset(th, 0, sizeof *th);
        th->tid = tid;
    }
    return th;
}

/* The thread's list of stacks of kind k (TF_COL_MTF entries, the first
 * th->nstack[k] of them in use). */
INLINE uint32_t *stack_list(const tf_col_thread *th, int k)
{
    return (uint32_t *)th->stack[k] + th->front[k];
}

/* The list's bottom reached: its entries but the last go to the room's
 * top, the new id in front of them. */
static __attribute__((noinline)) void mtf_wrap(tf_col_thread *th, int k, uint32_t id)
{
    uint32_t f = TF_COL_MTF_ROOM - TF_COL_MTF;
    memmove(th->stack[k] + f + 1, th->stack[k], (TF_COL_MTF - 1) * sizeof th->stack[k][0]);
    th->stack[k][f] = id;
    th->front[k] = (uint8_t)f;
}

/* Entries 0..i-1 move down one, the rest stay: a fixed number of selects,
 * from the end so each reads an entry not yet moved (a shifting loop
 * becomes a memmove call of a few bytes, and copies through a buffer made
 * the loads wait on the stores). */
static __attribute__((noinline)) void mtf_move(uint32_t *list, uint32_t id, uint32_t i)
{
    for (uint32_t j = TF_COL_MTF - 1; j > 0; j--)
        list[j] = j <= i ? list[j - 1] : list[j];
    list[0] = id;
}

/* Moves id to the front of the thread's list of stacks of kind k, from
 * index i (>= the list's length when it is not there: it goes in front, and
 * the last one out when the list is full). */
INLINE void mtf_push(tf_col_thread *th, int k, uint32_t id, uint32_t i)
{
    uint32_t n = th->nstack[k];
    if (i < n && i == 0)
        return;                 /* most events: the thread's previous stack */
    if (i < n) {
        mtf_move(stack_list(th, k), id, i);
        return;
    }
    /* Not in the list (most other events on format_bench's stream: a
     * thread's stacks vary more than 8 deep): every entry moves down one,
     * the last out, which is the list starting one slot lower (the entries
     * past the list's length it takes in are stale, as they were).  Each
     * entry moved one down, this was a fifth of update's instructions. */
    if (n < TF_COL_MTF)
        th->nstack[k] = (uint8_t)(n + 1);
    uint32_t f = th->front[k];
    if (!f) {
        mtf_wrap(th, k, id);   /* once every TF_COL_MTF_ROOM - TF_COL_MTF new ids */
        return;
    }
    th->front[k] = (uint8_t)--f;
    th->stack[k][f] = id;
}

static const tf_col_op *open_op(const tf_col_thread *th, uint64_t seq)
{
    if (!th || !seq)
        return NULL;
    for (uint32_t i = th->nops; i-- > 0;)
        if (th->ops[i].seq == seq)
            return &th->ops[i];
    return NULL;
}

/* The operation an event is nested in: the thread's innermost open one (an
 * op_end closes that one, and is nested in the one outside it). */
static uint64_t parent_prediction(const tf_col_thread *th, uint32_t kind)
{
    if (!th)
        return 0;
    uint32_t depth = kind == TF_EV_POOL_OP_END ? 2 : 1;
    return th->nops >= depth ? th->ops[th->nops - depth].seq : 0;
}

/* ------------------------------------------------------------ fields */

/* How a block writes a kind field: a coder and its column. */
enum coder {
    PLAIN,       /* its 1.x encoding's value (pointers: delta from the class's last) */
    ALLOC_PTR,   /* rank among the space's freed blocks, or a delta */
    FREE_PTR,    /* rank among the space's live blocks, or a delta */
    OP_ARG,      /* a free operation's pointer as FREE_PTR, else a size */
    REQUESTED,   /* against the enclosing allocation operation's size */
    GRANTED,     /* against requested rounded up to the grants' granularity */
    FREE_SIZE,   /* against the freed block's size */
    OP_BEGIN,    /* against the thread's innermost open operation */
    OP_KIND,     /* an op_end's op: against the thread's innermost open operation's */
    POOL_ID      /* against the last event of the kind's */
};

typedef struct fcode { uint8_t coder, col; } fcode;

#define S_(c) { PLAIN, TF_COL_SMALL }
static const fcode cuda_alloc_codes[] = { S_(), S_(), S_(), S_(), { ALLOC_PTR, TF_COL_DEV_RANK },
                                          { PLAIN, TF_COL_SIZE }, { PLAIN, TF_COL_STREAM } };
static const fcode cuda_free_codes[] = { S_(), S_(), S_(), S_(), { FREE_PTR, TF_COL_DEV_RANK },
                                         { FREE_SIZE, TF_COL_SIZE }, { PLAIN, TF_COL_STREAM } };
static const fcode pool_alloc_codes[] = { { POOL_ID, TF_COL_SMALL }, { ALLOC_PTR, TF_COL_DEV_RANK },
                                          { REQUESTED, TF_COL_SIZE }, { GRANTED, TF_COL_SIZE },
                                          { PLAIN, TF_COL_STREAM } };
static const fcode pool_free_codes[] = { { POOL_ID, TF_COL_SMALL }, { FREE_PTR, TF_COL_DEV_RANK },
                                         { PLAIN, TF_COL_SIZE }, { FREE_SIZE, TF_COL_SIZE },
                                         { PLAIN, TF_COL_STREAM } };
static const fcode op_begin_codes[] = { { POOL_ID, TF_COL_SMALL }, S_(), { PLAIN, TF_COL_SEQREL },
                                        { OP_ARG, TF_COL_SIZE } };
static const fcode op_end_codes[] = { { POOL_ID, TF_COL_SMALL }, { OP_KIND, TF_COL_SMALL },
                                      { OP_BEGIN, TF_COL_SEQREL },
                                      { PLAIN, TF_COL_SIZE } };
static const fcode segment_codes[] = { { POOL_ID, TF_COL_SMALL }, S_(), { PLAIN, TF_COL_DEV_LIT },
                                       { PLAIN, TF_COL_SIZE } };
static const fcode gc_codes[] = { { PLAIN, TF_COL_GC }, { PLAIN, TF_COL_GC }, { PLAIN, TF_COL_GC },
                                  { PLAIN, TF_COL_GC }, { PLAIN, TF_COL_GC }, { PLAIN, TF_COL_GC },
                                  { PLAIN, TF_COL_GC }, { PLAIN, TF_COL_GC } };
static const fcode host_alloc_codes[] = { S_(), { ALLOC_PTR, TF_COL_HOST_RANK }, { PLAIN, TF_COL_SIZE },
                                          S_() };
static const fcode host_free_codes[] = { S_(), { FREE_PTR, TF_COL_HOST_RANK }, { FREE_SIZE, TF_COL_SIZE },
                                         S_() };
static const fcode py_free_codes[] = { { FREE_PTR, TF_COL_HOST_RANK }, S_() };
static const fcode double_init_codes[] = { { PLAIN, TF_COL_HOST_LIT }, S_() };
static const fcode small_codes[] = { S_(), S_() };
static const fcode release_failed_codes[] = { { PLAIN, TF_COL_SEQREL }, S_() };
static const fcode end_codes[] = { { PLAIN, TF_COL_END }, { PLAIN, TF_COL_END }, { PLAIN, TF_COL_END },
                                   { PLAIN, TF_COL_END }, { PLAIN, TF_COL_END } };
#undef S_

/* The memory space of an allocation or free kind; -1 for other kinds. */
static inline int space_of(uint32_t kind)
{
    switch (kind) {
    case TF_EV_CUDA_ALLOC: case TF_EV_CUDA_FREE: return TF_SPACE_CUDA;
    case TF_EV_POOL_ALLOC: case TF_EV_POOL_FREE: return TF_SPACE_POOL;
    case TF_EV_HOST_ALLOC: case TF_EV_HOST_FREE: case TF_EV_PY_ALLOC: case TF_EV_PY_FREE:
        return TF_SPACE_HOST;
    default: return -1;
    }
}

/* The pointer (and size: what a free of it would say) of an allocation or
 * free event. */
static inline uint64_t ptr_of(uint32_t kind, const tf_event *e)
{
    switch (kind) {
    case TF_EV_CUDA_ALLOC: case TF_EV_CUDA_FREE: return e->u.cuda.ptr;
    case TF_EV_POOL_ALLOC: case TF_EV_POOL_FREE: return e->u.pool.ptr;
    default: return e->u.host.ptr;
    }
}

static uint64_t size_of(const tf_event *e)
{
    switch (e->kind) {
    case TF_EV_CUDA_ALLOC: case TF_EV_CUDA_FREE: return e->u.cuda.size;
    case TF_EV_POOL_ALLOC: case TF_EV_POOL_FREE: return e->u.pool.granted;
    case TF_EV_PY_FREE: return 0;
    default: return e->u.host.size;
    }
}

/* A pointer as its rank in set, or (rank 0) a delta from its class's last
 * pointer. */
INLINE uint64_t ranked(col_io *io, const int dec, tf_colstate *st, tf_rankset *set, unsigned col,
                       unsigned cls, uint64_t v)
{
    uint64_t r = dec ? 0 : tf_rankset_rank(set, v);
    sym(io, dec, col, &r);
    if (!r)
        return residual(io, dec, col + 1, v, st->ptr[cls]);   /* the .lit column follows .rank */
    if (dec && !(v = r <= UINT32_MAX ? tf_rankset_at(set, (uint32_t)r) : 0))
        fail(io, "a rank past the set");
    return v;
}

/* `kind` is e->kind, a constant where code_kind_fields is inlined: read
 * from e, it was read again for each field (a field stored into e might
 * have changed it, for all the compiler knew) and space_of's switch run
 * again with it. */
INLINE void code_field(col_io *io, uint32_t *pres, const int dec, tf_colstate *st, tf_event *e, const tf_col_thread *th,
                       const uint32_t kind, const tf_field *f, fcode fc, unsigned bit)
{
    uint8_t *at = (uint8_t *)e + f->offset;
    int wide = f->enc != TF_ENC_U32 && f->enc != TF_ENC_S32;
    uint64_t v = 0, pred = 0;
    uint32_t v32;
    if (wide) {
        memcpy(&v, at, 8);
    } else {
        memcpy(&v32, at, 4);
        v = f->enc == TF_ENC_S32 ? (uint64_t)(int64_t)(int32_t)v32 : v32;
    }
    int sp = space_of(kind);
    /* py_free's pointer is a plain number in 1.x (event_fields.h), a host
     * pointer here. */
    unsigned cls = sp == TF_SPACE_HOST ? TF_PTR_HOST : f->ptr_class;
    const tf_col_op *op;
    uint64_t block = 0;
    int held = 0;

    switch (fc.coder) {
    case PLAIN:
        if (!here(pres, dec, bit, v, 0)) {
            v = 0;
            break;
        }
        if (f->enc == TF_ENC_PTR) {
            v = residual(io, dec, fc.col, v, st->ptr[cls]);
            st->ptr[cls] = v;
        } else if (f->enc == TF_ENC_SEQREL) {
            uint64_t d = e->seq - v;
            sym(io, dec, fc.col, &d);
            v = e->seq - d;
        } else if (f->enc == TF_ENC_S32) {
            uint64_t z = tf_zigzag((int64_t)v);
            sym(io, dec, fc.col, &z);
            if (dec)
                v = (uint64_t)tf_unzigzag(z);
        } else {
            sym(io, dec, fc.col, &v);
        }
        break;
    case ALLOC_PTR:
        v = here(pres, dec, bit, v, 0) ? ranked(io, dec, st, &st->freed[sp], fc.col, cls, v) : 0;
        if (v)
            st->ptr[cls] = v;
        io->took = v && tf_rankset_remove(&st->freed[sp], v, &io->whole);
        break;
    case OP_ARG:
        if (e->u.pool_op.op != TF_POOL_OP_FREE) {
            if (here(pres, dec, bit, v, 0))
                sym(io, dec, fc.col, &v);
            else
                v = 0;
            break;
        }
        sp = TF_SPACE_POOL;
        cls = TF_PTR_DEVICE;
        fc.col = TF_COL_DEV_RANK;
        /* a pointer of the pool's, as a free names it */
        __attribute__((fallthrough));
    case FREE_PTR:
        if (kind == TF_EV_POOL_FREE && (op = open_op(th, e->parent)) && op->op == TF_POOL_OP_FREE)
            pred = op->arg;
        v = here(pres, dec, bit, v, pred) ? ranked(io, dec, st, &st->live[sp], fc.col, cls, v) : pred;
        if (v)
            st->ptr[cls] = v;
        break;
    case REQUESTED:
        if ((op = open_op(th, e->parent)) && op->op == TF_POOL_OP_ALLOC)
            pred = op->arg;
        v = here(pres, dec, bit, v, pred) ? residual(io, dec, fc.col, v, pred) : pred;
        break;
    case GRANTED:
        pred = e->u.pool.requested;
        if (st->align)
            pred = (pred + st->align - 1) & -st->align;   /* align is a power of two */
        v = here(pres, dec, bit, v, pred) ? residual(io, dec, fc.col, v, pred) : pred;
        if (v && (!st->align || (v & -v) < st->align))
            st->align = v & -v;
        break;
    case FREE_SIZE:
        held = tf_rankset_get(&st->live[sp], ptr_of(kind, e), &block);
        pred = held && st->size_ok[kind - 32] ? block : 0;
        v = here(pres, dec, bit, v, pred) ? residual(io, dec, fc.col, v, pred) : pred;
        st->size_ok[kind - 32] = held && block == v;
        break;
    case OP_BEGIN:
        pred = th && th->nops ? th->ops[th->nops - 1].seq : 0;
        if (here(pres, dec, bit, v, pred)) {
            uint64_t d = e->seq - v;
            sym(io, dec, fc.col, &d);
            v = e->seq - d;
        } else {
            v = pred;
        }
        break;
    case OP_KIND:
        pred = th && th->nops ? th->ops[th->nops - 1].op : 0;
        if (here(pres, dec, bit, v, pred))
            sym(io, dec, fc.col, &v);
        else
            v = pred;
        break;
    case POOL_ID:
        pred = st->lastpool[kind - TF_EV_POOL_ALLOC];
        if (here(pres, dec, bit, v, pred))
            sym(io, dec, fc.col, &v);
        else
            v = pred;
        st->lastpool[kind - TF_EV_POOL_ALLOC] = (uint32_t)v;
        break;
    }
    if (!dec)
        return;
    if (wide) {
        memcpy(at, &v, 8);
        return;
    }
    if (f->enc == TF_ENC_S32 ? (int64_t)v != (int32_t)v : v > UINT32_MAX)
        fail(io, "a 32-bit field out of range");
    v32 = (uint32_t)v;
    memcpy(at, &v32, 4);
}

/* A time step (a difference of two times, signed) in units of st->tunit,
 * zigzagged into *z; 0 when it is not a whole number of units.  A 64-bit
 * divide was a fifth of the encoder's time per event: an exact quotient is
 * the step times the inverse of the unit's odd part, after shifting out its
 * power of two, and that product is at most 2^64 / odd exactly when the
 * step was a multiple. */
INLINE int time_steps(const tf_colstate *st, uint64_t step, uint64_t *z)
{
    int neg = (int64_t)step < 0;
    uint64_t mag = neg ? -step : step;
    if (mag & ((1ull << st->tunit_shift) - 1))
        return 0;
    uint64_t q = (mag >> st->tunit_shift) * st->tunit_inv;
    if (q > st->tunit_qmax)
        return 0;
    *z = tf_zigzag((int64_t)(neg ? 0 - q : q));
    return 1;
}

/* id's rank in a thread's list of stacks (1: the front), 0 when its first
 * `held` entries lack it.  All TF_COL_MTF entries are compared at once and
 * the first hit taken: a search loop that stops at the hit was 6% of the
 * encoder's instructions (its length is the rank, which no branch
 * predictor knows). */
INLINE uint64_t stack_rank(const uint32_t *list, uint32_t held, uint32_t id)
{
    if (!held)
        return 0;
    uint32_t hit = 0;
#ifdef __SSE2__
    _Static_assert(TF_COL_MTF == 8, "two vectors of four ids");
    __m128i want = _mm_set1_epi32((int)id);
    __m128i lo = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)list), want);
    __m128i hi = _mm_cmpeq_epi32(_mm_loadu_si128((const __m128i *)(list + 4)), want);
    hit = (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(lo)) |
          (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(hi)) << 4;
#else
    for (uint32_t i = 0; i < TF_COL_MTF; i++)
        hit |= (uint32_t)(list[i] == id) << i;
#endif
    hit &= (1u << held) - 1;   /* past `held`: zeros or stale, not the list */
    return hit ? (uint64_t)__builtin_ctz(hit) + 1 : 0;
}

/* The common fields (FORMAT.md section 7's bits 0 to 5).  Encoding, e is
 * the event and stays as it is: each field is rebuilt from its token only
 * when decoding (rebuilt when encoding too, the same values came back at
 * the cost of a multiply, a zigzag and a store or two per field). */
INLINE void code_common(col_io *io, uint32_t *pres, const int dec, tf_colstate *st, tf_event *e, const tf_col_thread **thp)
{
    uint64_t seq = st->seq + 1;
    if (here(pres, dec, 0, e->seq, seq)) {
        uint64_t gap = e->seq - seq;
        sym(io, dec, TF_COL_SEQ, &gap);
        if (dec)
            e->seq = seq + gap;
    } else if (dec) {
        e->seq = seq;
    }

    /* Encoding, the event's thread is looked up once, for its rank (when
     * the tid is written) and its entry (the predictions below); it was
     * searched twice for each event of another thread than the last. */
    uint32_t rank32 = 0;
    const tf_col_thread *th = dec ? NULL : thread_find(st, e->tid, &rank32);
    if (here(pres, dec, 1, e->tid, st->tid)) {
        uint64_t rank = rank32, tid = e->tid;
        sym(io, dec, TF_COL_TID_RANK, &rank);
        if (!rank)
            sym(io, dec, TF_COL_TID_LIT, &tid);
        else if (dec)
            tid = rank <= st->nthreads ? st->thread[st->order[rank - 1]].tid : (fail(io, "a thread rank past the threads"), 0);
        if (dec && tid > UINT32_MAX)
            fail(io, "a thread id out of range");
        if (dec)
            e->tid = (uint32_t)tid;
    } else if (dec) {
        e->tid = st->tid;
    }

    if (here(pres, dec, 2, e->t_ns, st->t_ns)) {
        uint64_t z = 0;
        if (!dec && !time_steps(st, e->t_ns - st->t_ns, &z)) {
            fail(io, "a time off the unit");
            io->off_unit = 1;
            return;
        }
        sym(io, dec, TF_COL_TIME, &z);
        if (dec)
            e->t_ns = st->t_ns + (uint64_t)tf_unzigzag(z) * st->tunit;
    } else if (dec) {
        e->t_ns = st->t_ns;
    }

    if (dec)
        th = thread_find(st, e->tid, &rank32);
    io->th_rank = th ? rank32 : 0;
    *thp = th;
    uint64_t pp = parent_prediction(th, e->kind);
    if (here(pres, dec, 3, e->parent, pp)) {
        uint64_t d = e->seq - e->parent;
        sym(io, dec, TF_COL_PARENT, &d);
        if (dec)
            e->parent = e->seq - d;
    } else if (dec) {
        e->parent = pp;
    }

    /* Unrolled: GCC kept the loop, and with it a test of k at each of the
     * lines below (unrolled, decoding took 789 -> 747 instructions per
     * event, encoding 967 -> 927). */
#pragma GCC unroll 2
    for (int k = 0; k < 2; k++) {
        uint32_t *id = k ? &e->py_stack : &e->native_stack;
        unsigned col = k ? TF_COL_PSTACK_RANK : TF_COL_NSTACK_RANK;
        uint32_t held = th ? th->nstack[k] : 0;
        const uint32_t *list = held ? stack_list(th, k) : NULL;
        uint32_t pred = held ? list[0] : 0;
        io->mtf_at[k] = held ? 0 : TF_COL_MTF;
        if (!here(pres, dec, 4 + (unsigned)k, *id, pred)) {
            if (dec)
                *id = pred;
            continue;
        }
        uint64_t rank = dec ? 0 : stack_rank(list, held, *id);
        sym(io, dec, col, &rank);
        if (rank) {
            if (dec) {
                if (rank > held)
                    fail(io, "a stack rank past the thread's stacks");
                else
                    *id = list[rank - 1];
            }
            io->mtf_at[k] = (uint32_t)rank - 1;
            continue;
        }
        uint64_t v = residual(io, dec, col + 1, *id, st->lastdef[k]);
        if (dec && v > UINT32_MAX)
            fail(io, "a stack id out of range");
        if (dec)
            *id = (uint32_t)v;
        /* A literal names a stack the list does not hold (the encoder
         * writes a rank for any it holds), so it goes in front and nothing
         * is searched.  A crafted block may name one the list holds: the
         * list then holds it twice, which ranks still decode the same way
         * every time (the decoder searched here until session 17: 2 to 3 ns
         * of its ~47 per event). */
        io->mtf_at[k] = TF_COL_MTF;
    }
}

/* What an event changes in the state, once all its fields are known. */
static void update(tf_colstate *st, const tf_event *e, const col_io *io)
{
    st->seq = e->seq;
    st->t_ns = e->t_ns;
    st->tid = e->tid;
    int sp = space_of(e->kind);
    uint64_t p = sp >= 0 ? ptr_of(e->kind, e) : 0, size = sp >= 0 ? size_of(e) : 0;
    switch (e->kind) {
    case TF_EV_CUDA_ALLOC: case TF_EV_POOL_ALLOC: case TF_EV_HOST_ALLOC: case TF_EV_PY_ALLOC:
        if (!p)
            break;
        tf_rankset_add(&st->live[sp], p, size);
        /* The allocation took the start of a free room: the rest is where
         * the next one may go. */
        if (io->took && io->whole > size && size && p + size > p)
            tf_rankset_add(&st->freed[sp], p + size, io->whole - size);
        break;
    case TF_EV_CUDA_FREE: case TF_EV_POOL_FREE: case TF_EV_HOST_FREE: case TF_EV_PY_FREE:
        if (!p)
            break;
        size = 0;
        tf_rankset_remove(&st->live[sp], p, &size);
        tf_rankset_add(&st->freed[sp], p, size);
        break;
    case TF_EV_POOL_SEGMENT:
        if (e->u.segment.grow && e->u.segment.ptr && e->u.segment.size)
            tf_rankset_add(&st->freed[TF_SPACE_POOL], e->u.segment.ptr, e->u.segment.size);
        break;
    default:
        break;
    }
    tf_col_thread *th = thread_touch(st, e->tid, io->th_rank);
    mtf_push(th, 0, e->native_stack, io->mtf_at[0]);
    mtf_push(th, 1, e->py_stack, io->mtf_at[1]);
    if (e->kind == TF_EV_POOL_OP_BEGIN && th->nops < TF_COL_OPS) {
        th->ops[th->nops++] = (tf_col_op){ .seq = e->seq, .arg = e->u.pool_op.arg, .op = e->u.pool_op.op };
    } else if (e->kind == TF_EV_POOL_OP_END) {
        for (uint32_t i = th->nops; i-- > 0;)
            if (th->ops[i].seq == e->u.pool_op.begin) {
                memmove(th->ops + i, th->ops + i + 1, (th->nops - i - 1) * sizeof th->ops[0]);
                th->nops--;
                break;
            }
    }
}

/* One event, either way (see the top of the file).  Decoding, e holds its
 * kind and zeros. */
/* Inlined once per kind (code_fields), as the writer's put_kind_fields:
 * with the layout and the coders constants, each field's coder, column and
 * encoding are known where it is coded, and the switches go away. */
INLINE void code_kind_fields(col_io *io, uint32_t *pres, const int dec, tf_colstate *st, tf_event *e, const tf_col_thread *th,
                             const uint32_t kind, const tf_event_layout *layout, const fcode *codes)
{
/* Encoding, no field fails (only a time off the unit does, before the
 * fields: code_event skips them then); decoding, any token may, and the
 * fields after it are not coded.  (Tested at each field when encoding, the
 * flag was loaded again after every token stored.) */
#define CODE_FIELD(i)                                                                          \
    if (i < layout->nfields && (!dec || !io->bad))                                            \
        code_field(io, pres, dec, st, e, th, kind, &layout->fields[i], codes[i], TF_COMMON_FIELDS + i);
    CODE_FIELD(0) CODE_FIELD(1) CODE_FIELD(2) CODE_FIELD(3)
    CODE_FIELD(4) CODE_FIELD(5) CODE_FIELD(6) CODE_FIELD(7)
#undef CODE_FIELD
    _Static_assert(TF_KIND_FIELDS_MAX == 8, "one CODE_FIELD per possible field");
}

INLINE void code_fields(col_io *io, uint32_t *pres, const int dec, tf_colstate *st, tf_event *e, const tf_col_thread *th)
{
    switch (e->kind) {
#define KIND(kind, layout, codes) case kind: code_kind_fields(io, pres, dec, st, e, th, kind, &layout, codes); return;
    KIND(TF_EV_CUDA_ALLOC, tf_cuda_layout, cuda_alloc_codes)
    KIND(TF_EV_CUDA_FREE, tf_cuda_layout, cuda_free_codes)
    KIND(TF_EV_POOL_ALLOC, tf_pool_layout, pool_alloc_codes)
    KIND(TF_EV_POOL_FREE, tf_pool_layout, pool_free_codes)
    KIND(TF_EV_POOL_OP_BEGIN, tf_pool_op_layout, op_begin_codes)
    KIND(TF_EV_POOL_OP_END, tf_pool_op_layout, op_end_codes)
    KIND(TF_EV_POOL_SEGMENT, tf_segment_layout, segment_codes)
    KIND(TF_EV_GC_START, tf_gc_layout, gc_codes)
    KIND(TF_EV_GC_STOP, tf_gc_layout, gc_codes)
    KIND(TF_EV_HOST_ALLOC, tf_host_layout, host_alloc_codes)
    KIND(TF_EV_PY_ALLOC, tf_host_layout, host_alloc_codes)
    KIND(TF_EV_HOST_FREE, tf_host_layout, host_free_codes)
    KIND(TF_EV_PY_FREE, tf_py_free_layout, py_free_codes)
    KIND(TF_EV_PY_DOUBLE_INIT, tf_double_init_layout, double_init_codes)
    KIND(TF_EV_MARK, tf_mark_layout, small_codes)
    KIND(TF_EV_RELEASE_FAILED, tf_release_failed_layout, release_failed_codes)
    KIND(TF_EV_END, tf_end_layout, end_codes)
#undef KIND
    default:
        /* A kind TF_EVENT_KINDS gained and this list did not: its fields
         * would be lost, so the frame stays records. */
        fail(io, "an event kind without column coders");
        return;
    }
}

INLINE void code_event(col_io *io, const int dec, tf_colstate *st, tf_event *e)
{
    const tf_event_layout *layout = tf_event_layout_of(e->kind);
    uint32_t *last = &st->lastpres[e->kind - 32];
    uint64_t pres = 0;
    if (dec) {
        pres = get(io, TF_COL_PRESENCE) ^ *last;
        if (pres >> (TF_COMMON_FIELDS + layout->nfields))
            fail(io, "a presence map with bits past the kind's fields");
    }
    uint32_t map = (uint32_t)pres;
    io->took = 0;
    const tf_col_thread *th = NULL;
    code_common(io, &map, dec, st, e, &th);
    if (dec || !io->bad)
        code_fields(io, &map, dec, st, e, th);
    if (!dec)
        put(io, TF_COL_PRESENCE, map ^ *last);
    *last = map;
    if (!io->bad)
        update(st, e, io);
}

/* The two directions, each compiled with its direction a constant: the
 * tests of `dec` fold away (a fifth of the coder's time went to them and to
 * the code they kept apart). */
static void encode_event(col_io *io, tf_colstate *st, tf_event *e)
{
    code_event(io, 0, st, e);
}

static void decode_event(col_io *io, tf_colstate *st, tf_event *e)
{
    code_event(io, 1, st, e);
}

static void state_reset(tf_colstate *st, uint64_t tunit)
{
    for (int s = 0; s < TF_SPACES; s++) {
        tf_rankset_clear(&st->live[s]);
        tf_rankset_clear(&st->freed[s]);
    }
    st->nthreads = 0;
    st->seq = st->t_ns = 0;
    st->tid = 0;
    memset(st->ptr, 0, sizeof st->ptr);
    memset(st->lastdef, 0, sizeof st->lastdef);
    st->align = 0;
    memset(st->lastpool, 0, sizeof st->lastpool);
    memset(st->size_ok, 1, sizeof st->size_ok);
    memset(st->lastpres, 0, sizeof st->lastpres);
    st->tunit = tunit ? tunit : 1;
    st->tunit_shift = (uint32_t)__builtin_ctzll(st->tunit);
    uint64_t odd = st->tunit >> st->tunit_shift, inv = odd;
    for (int i = 0; i < 5; i++)
        inv *= 2 - odd * inv;   /* Newton: each step doubles the bits of odd * inv == 1 */
    st->tunit_inv = inv;
    st->tunit_qmax = UINT64_MAX / odd;
}

/* A definition record's effect on the state. */
static int definition(tf_colstate *st, uint32_t kind, tf_cursor c, int first)
{
    if (kind == TF_REC_FRAME) {
        if (!first)
            return -1;
        tf_get_uv(&c);
        st->seq = tf_get_uv(&c);
        st->t_ns = tf_get_uv(&c);
        return c.bad ? -1 : 0;
    }
    if (first || kind == TF_REC_HEADER)
        return -1;     /* a block is one frame, opened by FRAME */
    if (kind == TF_REC_NATIVE_STACK || kind == TF_REC_PY_STACK) {
        uint64_t id = tf_get_uv(&c);
        if (!c.bad && id <= UINT32_MAX)
            st->lastdef[kind == TF_REC_PY_STACK] = (uint32_t)id;
    }
    return 0;
}

/* ------------------------------------------------------------ 1.x records */

/* A chunk's event record into e (records.h), for a block: only kinds this
 * version defines, and nothing a block would not carry (presence bits or
 * bytes past the known fields, which a later minor version may add: such a
 * frame stays records, FORMAT.md section 9).
 *
 * The cursor runs to the chunk's end, not the payload's: records.h's
 * varint reader takes its unrolled path where ten bytes are left, which at
 * a payload's end, with the payload's end as the cursor's, it seldom was.
 * A field that runs past the payload leaves the cursor past its end, and
 * the record is refused as one whose fields do not end where it does: the
 * same verdict as a cursor that stopped there. */
INLINE int read_event(tf_bases *b, uint32_t kind, const uint8_t *payload, uint64_t n,
                      const uint8_t *chunk_end, tf_event *e)
{
    const tf_event_layout *layout = layout_of(kind);
    if (!layout || n < 2 ||
        ((uint32_t)payload[0] | (uint32_t)payload[1] << 8) >> (TF_COMMON_FIELDS + layout->nfields))
        return -1;
    tf_cursor c = { payload, chunk_end, 0 };
    return tf_get_event(b, kind, &c, e) == 1 && c.p == payload + n ? 0 : -1;
}

/* ------------------------------------------------------------ encoder */


tf_colenc *tf_colenc_new(void)
{
    tf_colenc *enc = tf_pages_resize(NULL, 0, sizeof *enc);
    return enc;
}

void tf_colenc_free(tf_colenc *enc)
{
    if (!enc)
        return;
    for (int i = 0; i < TF_COLUMNS; i++)
        tf_pages_free(enc->col[i].data, enc->col[i].cap);
    tf_pages_free(enc, sizeof *enc);
}

static int encode_once(tf_colenc *enc, const uint8_t *records, size_t len, uint64_t tunit,
                       uint64_t *nrec, int *off_unit)
{
    tf_colstate *st = &enc->st;
    state_reset(st, tunit);
    for (int i = 0; i < TF_COLUMNS; i++)
        enc->col[i].len = 0;
    col_io io = { .enc = enc };
    tf_bases b = { 0 };
    tf_cursor c = { records, records + len, 0 };
    *nrec = 0;
    *off_unit = 0;
    while (c.p < c.end) {
        uint64_t kind = tf_get_uv(&c);
        uint64_t n;
        const uint8_t *payload = tf_get_bytes(&c, &n);
        if (c.bad || kind > UINT32_MAX)
            return -1;
        tf_cursor pc = { payload, payload + n, 0 };
        if (room_for_record(&io) < 0)
            return -1;
        put(&io, TF_COL_KIND, kind);
        if (kind < 32) {
            if (definition(st, (uint32_t)kind, pc, *nrec == 0) < 0)
                return -1;
            if (kind == TF_REC_FRAME)
                tf_bases_frame(&b, st->seq, st->t_ns);
            put(&io, TF_COL_DEFS, n);
            size_t used = (size_t)(io.w[TF_COL_DEFS] - enc->col[TF_COL_DEFS].data);
            if (tf_pages_reserve(&enc->col[TF_COL_DEFS].data, &enc->col[TF_COL_DEFS].cap, used, n,
                                 16384) < 0)
                return -1;
            memcpy(enc->col[TF_COL_DEFS].data + used, payload, n);
            io.w[TF_COL_DEFS] = enc->col[TF_COL_DEFS].data + used + n;
            io.room = io.room > n ? io.room - n : 0;
        } else {
            if (*nrec == 0)
                return -1;
            tf_event e;
            if (read_event(&b, (uint32_t)kind, payload, n, c.end, &e) < 0)
                return -1;
            encode_event(&io, st, &e);
            if (io.bad) {
                *off_unit = io.off_unit;
                return -1;
            }
        }
        ++*nrec;
    }
    sync_lens(&io);
    return io.bad ? -1 : 0;
}

int tf_columns_encode(tf_colenc *enc, const uint8_t *records, size_t len, uint64_t tunit)
{
    uint64_t nrec;
    int off_unit;
    if (encode_once(enc, records, len, tunit, &nrec, &off_unit) < 0) {
        /* A time between two events is not a whole number of units (a log
         * written in a finer unit than it says): the block counts in ns. */
        if (!off_unit || tunit <= 1 || encode_once(enc, records, len, 1, &nrec, &off_unit) < 0)
            return -1;
        tunit = 1;
    }
    uint8_t hdr[(3 + TF_COLUMNS) * TF_VARINT_MAX], *h = hdr;
    h = tf_put_uv(h, tunit);
    h = tf_put_uv(h, nrec);
    h = tf_put_uv(h, TF_COLUMNS);
    size_t body = 0;
    for (int i = 0; i < TF_COLUMNS; i++) {
        h = tf_put_uv(h, enc->col[i].len);
        body += enc->col[i].len;
    }
    size_t payload = (size_t)(h - hdr) + body;
    uint8_t *p = tf_put_uv(enc->head, TF_REC_COLUMNS);
    p = tf_put_uv(p, payload);
    memcpy(p, hdr, (size_t)(h - hdr));
    enc->head_len = (size_t)(p - enc->head) + (size_t)(h - hdr);
    /* Not smaller than the records: they compress as well, and a 1.x-style
     * frame survives being cut short better (FORMAT.md section 10). */
    return enc->head_len + body < len ? 0 : 1;
}

int tf_colenc_pieces(const tf_colenc *enc, const void **data, size_t *len)
{
    int n = 0;
    data[n] = enc->head;
    len[n++] = enc->head_len;
    for (int i = 0; i < TF_COLUMNS; i++)
        if (enc->col[i].len) {
            data[n] = enc->col[i].data;
            len[n++] = enc->col[i].len;
        }
    return n;
}

size_t tf_colenc_size(const tf_colenc *enc)
{
    size_t n = enc->head_len;
    for (int i = 0; i < TF_COLUMNS; i++)
        n += enc->col[i].len;
    return n;
}

/* ------------------------------------------------------------ decoder */

static int grow_out(uint8_t **out, size_t *cap, size_t used, size_t need)
{
    if (*cap - used >= need)
        return 0;
    size_t n = *cap ? *cap : 65536;
    while (n - used < need)
        n *= 2;
    if (n > (size_t)1 << 28)
        return -1;   /* far past what any writer's frame holds */
    uint8_t *p = realloc(*out, n);
    if (!p)
        return -1;
    *out = p;
    *cap = n;
    return 0;
}

/* Where a decoded block goes: 1.x records (tf_columns_decode) or items
 * (tf_columns_decode_items).  decode_block is inlined once for each, with
 * `items` a constant. */
typedef struct block_out {
    uint8_t **rec;
    size_t *rec_len, *rec_cap;
    tf_event **item;
    size_t *nitems, *items_cap;
} block_out;

/* Room for one more item, up to 256 MiB of them as grow_out allows of
 * records: 2.4 million records, where a writer's block holds at most about
 * 350 thousand (a chunk is sealed by 1 MiB of records). */
static int grow_items(const block_out *o)
{
    if (*o->nitems < *o->items_cap)
        return 0;
    size_t n = *o->items_cap ? 2 * *o->items_cap : 4096;
    if (n > ((size_t)1 << 28) / sizeof(tf_event))
        return -1;
    tf_event *p = realloc(*o->item, n * sizeof *p);
    if (!p)
        return -1;
    *o->item = p;
    *o->items_cap = n;
    return 0;
}

INLINE int decode_block(tf_colstate *st, const uint8_t *block, size_t len, const char **why, const int items,
                        const block_out *o)
{
    tf_cursor c = { block, block + len, 0 };
    uint64_t tunit = tf_get_uv(&c), nrec = tf_get_uv(&c), ncols = tf_get_uv(&c);
    if (c.bad || tunit == 0 || ncols != TF_COLUMNS) {
        *why = "column block header";
        return -1;
    }
    col_io io = { 0 };
    uint64_t lens[TF_COLUMNS], total = 0;
    for (int i = 0; i < TF_COLUMNS; i++) {
        lens[i] = tf_get_uv(&c);
        total += lens[i];
        if (lens[i] > len)
            c.bad = 1;
    }
    if (c.bad || total != (uint64_t)(c.end - c.p)) {
        *why = "column block header";
        return -1;
    }
    for (int i = 0; i < TF_COLUMNS; i++) {
        io.in[i] = (tf_cursor){ c.p, c.p + lens[i], 0 };
        c.p += lens[i];
    }
    state_reset(st, tunit);
    tf_bases b = { 0 };
    *why = "column block";
    for (uint64_t i = 0; i < nrec; i++) {
        uint64_t kind = get(&io, TF_COL_KIND);
        if (io.in[TF_COL_KIND].bad) {
            *why = "a column ends early";
            return -1;
        }
        if (kind > UINT32_MAX)
            return -1;
        if (items && grow_items(o) < 0) {
            *why = "out of memory";
            return -1;
        }
        if (kind < 32) {
            uint64_t n = get(&io, TF_COL_DEFS);
            tf_cursor *d = &io.in[TF_COL_DEFS];
            if (d->bad) {
                *why = "a column ends early";
                return -1;
            }
            if (n > (uint64_t)(d->end - d->p))
                return -1;
            tf_cursor pc = { d->p, d->p + n, 0 };
            if (definition(st, (uint32_t)kind, pc, i == 0) < 0)
                return -1;
            if (items) {
                tf_event *it = &(*o->item)[(*o->nitems)++];
                tf_event_init(it, (uint32_t)kind);
                it->seq = (uint64_t)(d->p - block);
                it->t_ns = n;
                d->p += n;
                continue;
            }
            if (kind == TF_REC_FRAME)
                tf_bases_frame(&b, st->seq, st->t_ns);
            if (grow_out(o->rec, o->rec_cap, *o->rec_len, 2 * TF_VARINT_MAX + n) < 0) {
                *why = "out of memory";
                return -1;
            }
            uint8_t *p = tf_put_uv(*o->rec + *o->rec_len, kind);
            p = tf_put_uv(p, n);
            memcpy(p, d->p, n);
            *o->rec_len = (size_t)(p + n - *o->rec);
            d->p += n;
            continue;
        }
        if (i == 0 || !tf_event_layout_of((uint32_t)kind))
            return -1;
        tf_event local, *e = items ? &(*o->item)[*o->nitems] : &local;
        tf_event_init(e, (uint32_t)kind);
        decode_event(&io, st, e);
        if (io.bad) {
            *why = io.why ? io.why : "column block";
            return -1;
        }
        if (items) {
            ++*o->nitems;
            continue;
        }
        if (grow_out(o->rec, o->rec_cap, *o->rec_len, 2 * TF_VARINT_MAX + TF_EVENT_PAYLOAD_MAX) < 0) {
            *why = "out of memory";
            return -1;
        }
        *o->rec_len = (size_t)(tf_put_event(&b, *o->rec + *o->rec_len, e) - *o->rec);
    }
    for (int i = 0; i < TF_COLUMNS; i++) {
        if (io.in[i].bad) {
            *why = "a column ends early";
            return -1;
        }
        if (io.in[i].p != io.in[i].end) {
            *why = "column block: a column longer than its records";
            return -1;
        }
    }
    return 0;
}

int tf_columns_decode(tf_colstate *st, const uint8_t *block, size_t len, uint8_t **out,
                      size_t *out_len, size_t *out_cap, const char **why)
{
    block_out o = { .rec = out, .rec_len = out_len, .rec_cap = out_cap };
    return decode_block(st, block, len, why, 0, &o);
}

int tf_columns_decode_items(tf_colstate *st, const uint8_t *block, size_t len, tf_event **items,
                            size_t *nitems, size_t *items_cap, const char **why)
{
    *nitems = 0;
    block_out o = { .item = items, .nitems = nitems, .items_cap = items_cap };
    return decode_block(st, block, len, why, 1, &o);
}
