/*
 * columns.h - column blocks: a frame's records written field by field, with
 * what the frame has already said predicted away (FORMAT.md section 15).
 *
 * A frame's records compress poorly as they are: each event interleaves a
 * dozen unrelated numbers, and most of them repeat what an earlier event of
 * the frame already told (the pointer a free names was handed out a moment
 * ago; the size a pool grants is the size asked, rounded).  A column block
 * holds the same records as one COLUMNS record whose payload is a set of
 * columns, one per kind of value (kinds, presence maps, times, sizes, ...),
 * each value written as its difference from what the state of the frame so
 * far predicts, or left out when the prediction holds.  zstd then sees long
 * runs of similar small numbers.
 *
 * The encoder reads a sealed chunk of records and writes a block; the
 * decoder turns a block back into the very same records, byte for byte
 * (tf_columns_decode), or, for the reader, into those records' events and
 * the places of its definitions (tf_columns_decode_items: what the records
 * would give once parsed, without writing and parsing them).  Both
 * directions run the same prediction code (columns.c codes each event once,
 * in either direction), so they cannot disagree on what is predicted.
 *
 * Memory: the state (tf_colstate) has a fixed size, 560 KiB, whatever
 * the frame holds (the prediction sets are bounded by the format: rankset.h);
 * the encoder's columns grow to about the chunk's size.  The recorder maps
 * both (a signal handler may flush), so nothing here calls malloc except the
 * decoder's output, which only readers use (as items, 112 bytes per record
 * of the largest block read).
 *
 * Failure policy: the encoder returns -1 when a chunk cannot or should not be
 * a block (it starts with HEADER, holds an event kind this version does not
 * know, or would not be smaller); the caller writes the records as they are.
 * The decoder returns -1 on any inconsistency and says why; the reader counts
 * the frame as corrupt.
 */
#ifndef TF_COLUMNS_H
#define TF_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

#include "rankset.h"
#include "trace_format.h"

/* The columns of a block, in the order the block holds them. */
#define TF_COLUMN_LIST(X)                                                   \
    X(KIND, "kind") X(DEFS, "defs") X(PRESENCE, "presence") X(SEQ, "seq")   \
    X(TID_RANK, "tid.rank") X(TID_LIT, "tid.lit") X(TIME, "time")          \
    X(PARENT, "parent") X(NSTACK_RANK, "native_stack.rank")                \
    X(NSTACK_LIT, "native_stack.lit") X(PSTACK_RANK, "py_stack.rank")       \
    X(PSTACK_LIT, "py_stack.lit") X(SMALL, "small") X(SIZE, "size")         \
    X(DEV_RANK, "ptr.device.rank") X(DEV_LIT, "ptr.device.lit")            \
    X(HOST_RANK, "ptr.host.rank") X(HOST_LIT, "ptr.host.lit")              \
    X(STREAM, "ptr.stream") X(SEQREL, "seqrel") X(GC, "gc") X(END, "end")

enum tf_column {
#define TF_COLUMN_ENUM(id, name) TF_COL_##id,
    TF_COLUMN_LIST(TF_COLUMN_ENUM)
#undef TF_COLUMN_ENUM
    TF_COLUMNS
};

const char *tf_column_name(unsigned col);

/* Prediction state: threads, their stacks and open operations. */
#define TF_COL_THREADS 64   /* threads remembered per frame (the least recent goes) */
#define TF_COL_MTF 8        /* stack ids remembered per thread and kind of stack */
#define TF_COL_OPS 8        /* open pool operations remembered per thread */
/* Room for a stack list: the list is stack[k][front[k]] onwards, TF_COL_MTF
 * entries (those past nstack[k] stale), and an id new to it goes in at
 * front - 1 (the list slides down its room, and is copied back to the top
 * when it reaches the bottom), not in front of TF_COL_MTF - 1 entries each
 * moved one down (columns.c mtf_push). */
#define TF_COL_MTF_ROOM 32

typedef struct tf_col_op { uint64_t seq, arg; uint32_t op; } tf_col_op;

typedef struct tf_col_thread {
    uint32_t tid;
    uint8_t nops, nstack[2], front[2];
    uint32_t stack[2][TF_COL_MTF_ROOM];   /* native, Python; most recent first from front */
    tf_col_op ops[TF_COL_OPS];            /* innermost last */
} tf_col_thread;

enum { TF_SPACE_CUDA, TF_SPACE_POOL, TF_SPACE_HOST, TF_SPACES };

typedef struct tf_colstate {
    tf_rankset live[TF_SPACES];      /* blocks allocated and not freed; val = size */
    tf_rankset freed[TF_SPACES];     /* freed or free room, not yet reused; val = size */
    tf_col_thread thread[TF_COL_THREADS];
    uint8_t order[TF_COL_THREADS];   /* thread slots, most recent first */
    uint32_t nthreads;
    uint64_t seq, t_ns;              /* the previous event's */
    uint32_t tid;
    uint64_t ptr[3];                 /* last pointer of each class (event_fields.h) */
    uint32_t lastdef[2];             /* last NATIVE_STACK and PY_STACK id defined */
    uint64_t align;                  /* granularity of pool grants seen */
    uint32_t lastpool[5];            /* pool id of the last event of kinds 34..38 */
    uint8_t size_ok[17];             /* per event kind: its last free's size was its block's */
    uint32_t lastpres[17];           /* per event kind: its last presence map */
    uint64_t tunit;                  /* times in units of this many ns */
    /* tunit as odd << shift, for dividing by it without a divide: the
     * inverse of odd modulo 2^64, and the largest quotient of a multiple */
    uint64_t tunit_inv, tunit_qmax;
    uint32_t tunit_shift;
} tf_colstate;

/* The encoder: state and columns (kept between chunks, grown as needed). */
typedef struct tf_colenc {
    tf_colstate st;
    struct { uint8_t *data; size_t len, cap; } col[TF_COLUMNS];
    uint8_t head[2 * 10 + (3 + TF_COLUMNS) * 10];   /* COLUMNS record prefix, block header */
    size_t head_len;
} tf_colenc;

/* A mapped, zeroed encoder (mmap: callable where malloc is not); NULL when
 * out of memory.  tf_colenc_free unmaps it. */
tf_colenc *tf_colenc_new(void);
void tf_colenc_free(tf_colenc *enc);

/* Encodes a chunk's records as a block, times in units of tunit ns (the
 * log's time unit; a block falls back to 1 by itself when a time is not a
 * multiple).  0: the block is ready (tf_colenc_pieces); 1: it is ready but
 * not smaller than the records, write those; -1: the chunk cannot be a
 * block, write the records. */
int tf_columns_encode(tf_colenc *enc, const uint8_t *records, size_t len, uint64_t tunit);

/* The encoded block as consecutive pieces (the COLUMNS record's prefix and
 * header, then each column): fills at most TF_COLUMNS + 1 of each, returns
 * how many. */
int tf_colenc_pieces(const tf_colenc *enc, const void **data, size_t *len);
/* The whole COLUMNS record's size. */
size_t tf_colenc_size(const tf_colenc *enc);

/* Decodes a COLUMNS record's payload into records, appended to *out (grown
 * with realloc), using st (zeroed before its first use, then left as the
 * last block left it: each block resets it).  0, or -1 with *why set. */
int tf_columns_decode(tf_colstate *st, const uint8_t *block, size_t len, uint8_t **out,
                      size_t *out_len, size_t *out_cap, const char **why);

/* The same block as items, for a reader that wants events, not records
 * (1.x records cost a reader two codings of every event it never needed):
 * *items (grown with realloc) gets the block's records in order, *nitems
 * of them.  An item whose kind is an event kind (>= 32) is that event,
 * whole.  One whose kind is a definition's (< 32) is that record: its
 * payload is the `t_ns` bytes at `block + seq`, the rest zero.  The block
 * is whole or nothing, as for tf_columns_decode: 0, or -1 with *why set and
 * the items not to be used. */
int tf_columns_decode_items(tf_colstate *st, const uint8_t *block, size_t len, tf_event **items,
                            size_t *nitems, size_t *items_cap, const char **why);

#endif
