/*
 * reader_internal.h - the reader's state, shared by reader.c (frames, records,
 * events, damage) and reader_defs.c (definitions and their look-ups).
 */
#ifndef TF_READER_INTERNAL_H
#define TF_READER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "columns.h"
#include "event_fields.h"
#include "idmap.h"
#include "records.h"
#include "trace_format.h"
#include "varint.h"

/* A growable array of fixed-size items. */
typedef struct tf_list {
    void *items;
    uint32_t count, cap;
} tf_list;

/* Stacks, strings.  A Python stack defined by a push (2.1) or a chain (2.2)
 * has no items until first asked for: `push` is its entry in py_pushes plus
 * one. */
typedef struct tf_span { const void *items; uint32_t n, push; } tf_span;
/* A pushed frame and where its outer stack is in py_stacks (UINT32_MAX:
 * none, the frame is the outermost). */
typedef struct tf_py_push { tf_py_frame frame; uint32_t outer; } tf_py_push;
/* A module and when it was loaded: `from` and `until` on the module clock
 * (below), `until` UINT32_MAX while it is loaded. */
typedef struct tf_module_entry { tf_module *m; int loaded; uint32_t from, until; } tf_module_entry;
typedef struct tf_named { uint32_t num; const char *name, *py_name; } tf_named; /* threads, pools */
typedef struct tf_info { const char *key, *value; } tf_info;

/* Everything the definition records have told us so far. */
typedef struct tf_defs {
    tf_arena arena;                 /* the bytes behind every pointer below */
    tf_list strings;    tf_idmap string_ids;    /* tf_span of char */
    tf_list natives;    tf_idmap native_ids;    /* tf_span of uint64_t; its `push`: the
                                                 * module clock when it was defined */
    uint32_t module_clock;                      /* MODULE_LOAD and MODULE_UNLOAD records read */
    tf_list py_stacks;  tf_idmap py_stack_ids;  /* tf_span of tf_py_frame */
    tf_list py_pushes;                          /* tf_py_push */
    uint32_t py_next;   /* one past the last Python stack id this frame defined (0: none) */
    tf_list py_codes;   tf_idmap py_code_ids;   /* tf_py_code * */
    tf_list modules;    tf_idmap module_ids;    /* tf_module_entry */
    tf_list threads;    tf_idmap thread_ids;    /* tf_named */
    uint64_t thread_renames;                    /* THREAD records for a thread already named */
    tf_list pools;      tf_idmap pool_ids;      /* tf_named */
    tf_list infos;                              /* tf_info */
    tf_list unloads;                            /* uint32_t module id, file order */
    struct {                                    /* the last CHECKPOINT record */
        int present;
        uint64_t seq;
        const char *producer;
        const void *state;
        size_t len;
    } checkpoint;
} tf_defs;

/* Outcome of decoding one record. */
enum { TF_REC_OK = 0, TF_REC_BAD = -1, TF_REC_NOMEM = -2 };

/* Absorb one definition record (kind < 32); unknown kinds are ignored.
 * tf_defs_frame: a frame starts (what PY_STACK_CHAIN ids are read against). */
int tf_defs_absorb(tf_defs *d, uint32_t kind, tf_cursor *payload);
void tf_defs_frame(tf_defs *d);
/* The same for a restatement read after a gap: what is known is skipped. */
int tf_defs_absorb_restated(tf_defs *d, uint32_t kind, tf_cursor *payload);
void tf_defs_free(tf_defs *d);

#define TF_DAMAGE_NOTES 4

/* Reading through a window of the file instead of a mapping of all of it:
 * a log followed while it is written, or one cut into segment files
 * (reader_input.c). */
typedef struct tf_input tf_input;
/* Called when the reader needs more than the window holds (r->off at the
 * end, or a frame that does not end inside it).  1 when it is worth trying
 * again: bytes were added, the current segment turned out complete (so its
 * end now reads as final), or the next segment was opened; 0 when there is
 * nothing more for now (tf_input_waiting says whether more may come). */
int tf_input_more(tf_reader *r);
/* Reads more of the current segment's file into the window, the bytes
 * before r->off dropped (r->off is then 0): 1 when bytes were added.  For a
 * frame that does not end inside the window of a file that goes on. */
int tf_input_extend(tf_reader *r);
/* More bytes may still come for the current segment: a frame that does not
 * end inside the window is being written, not cut short. */
int tf_input_live(const tf_reader *r);
/* A later segment is on disk: the current one is complete. */
int tf_input_has_next(const tf_reader *r);
/* Nothing more for now, but the log goes on (follow mode). */
int tf_input_waiting(const tf_reader *r);
/* The HEADER that opens a segment after the first: checks it belongs to this
 * log and says what was lost on the way.  TF_INPUT_SKIP: the rest of its
 * frame restates definitions already read; TF_INPUT_ABSORB: read them (an
 * earlier segment was never read); TF_INPUT_STOP: not this log's. */
enum { TF_INPUT_NONE, TF_INPUT_SKIP, TF_INPUT_ABSORB, TF_INPUT_STOP };
int tf_input_opening(tf_reader *r, tf_cursor *header);
void tf_input_free(tf_input *in);
/* Open a log through a window (see trace_format.h, tf_reader_open_follow). */
tf_reader *tf_input_open(const char *path, int follow, int *again, char *err, size_t errlen);
/* reader.c: a reader with no data yet, and reading the HEADER that opens
 * its data. */
tf_reader *tf_reader_alloc(char *err, size_t errlen);
int tf_reader_read_header(tf_reader *r, char *err, size_t errlen);
/* reader.c's header decoding, for the input's segment headers. */
int tf_reader_decode_header(tf_reader *r, tf_header *h, tf_cursor *c, char *err, size_t errlen);
/* reader.c's damage notes. */
void tf_reader_note(tf_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct tf_reader {
    const uint8_t *data;        /* the whole file */
    size_t size;
    void *map;                  /* our mapping of it, when we opened the path */
    tf_input *in;               /* or a window of it (reader_input.c) */
    size_t off;                 /* where the next frame starts */
    size_t frame_at;            /* where the current frame started */
    void *dctx;                 /* ZSTD_DCtx */

    uint8_t *buf;               /* the current frame, decompressed */
    size_t buf_len, buf_cap, buf_pos;
    tf_event *items;            /* a column block's records, decoded (columns.h) */
    size_t item_pos, nitems;
    tf_colstate *colstate;      /* the block decoder's state (allocated on the first block) */
    int frame_partial;          /* the file ends inside the current frame */
    int frame_has_bases;        /* its FRAME record has been read */
    int restating;              /* it is a segment's restatement, read after a gap */
    int gap_pending;            /* the next event comes after a gap: TF_EVENT_AFTER_GAP */
    /* Seqs are contiguous in a log (FORMAT.md section 7): the walk checks
     * each event's against the last one it met, returned or skipped. */
    uint64_t seq_seen;          /* the last event's seq (0: none yet) */
    int seq_free;               /* the next event's seq is not checked: it follows an event of a
                                   kind this reader does not know (which may stand for several
                                   seqs, as a PY_FREES record does for a 2.2 reader
                                   and a PY_ALLOCS record for a 2.6 one) */
    unsigned notes_at_event;    /* damage notes made before the last event */
    uint64_t frame_index;       /* ordinal of the current frame in the file */
    uint64_t frames_seen;       /* frames met so far, damaged ones included */

    tf_bases b;                 /* delta bases (records.h) */
    tf_cursor run;              /* the rest of a PY_FREES or PY_ALLOCS record */
    tf_event run_last;          /* the event returned from it last */
    uint64_t run_unit;          /* a PY_ALLOCS record's time unit; 0 for PY_FREES */
    int run_split;              /* the record is a PY_ALLOCS_SPLIT (2.8), read from split */
    tf_py_allocs_run split;     /* the rest of a PY_ALLOCS_SPLIT record */

    tf_read_status st;
    tf_header header;
    tf_defs defs;

    char notes[TF_DAMAGE_NOTES][160];
    unsigned nnotes, dropped_notes;
    int resume_pending;         /* a corrupt frame awaits "resumed at" */
    int finished;
    char damage[TF_DAMAGE_NOTES * 160 + 64];
    size_t items_cap;
    size_t items_base;          /* where the block starts in buf (items' payloads) */
};

#endif
