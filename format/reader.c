/*
 * reader.c - frames, records and events (FORMAT.md sections 1, 3 and 7; what
 * it does with a damaged file, section 10).
 *
 * The file is walked frame by frame.  A complete frame is decompressed whole
 * and its checksum verified before any of its records is used; a frame cut
 * short by the end of the file is decompressed as far as it goes and its
 * complete records are used (that is what a killed process leaves).  A frame
 * that fails is reported and reading resumes at the next zstd frame magic.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "reader_internal.h"

#define FRAME_CONTENT_MAX (64u << 20) /* FORMAT.md: a frame holds at most 64 MiB */
#define WINDOW_LOG_MAX 26
#define SKIPPABLE_MAGIC 0x184D2A50u /* low 4 bits free */
#define HEADER_MAGIC "gputrace"

/* FRAME_WAIT: a frame of a log being written is not all there yet. */
enum frame_outcome { FRAME_NONE, FRAME_WHOLE, FRAME_CUT, FRAME_BAD, FRAME_WAIT };

/* ------------------------------------------------------------ damage */

static void compose_damage(tf_reader *r)
{
    size_t n = 0;
    r->damage[0] = '\0';
    for (unsigned i = 0; i < r->nnotes; i++)
        n += (size_t)snprintf(r->damage + n, sizeof r->damage - n, "%s%s", i ? "; " : "",
                              r->notes[i]);
    if (r->dropped_notes)
        snprintf(r->damage + n, sizeof r->damage - n, "; and %u more", r->dropped_notes);
}

static void vnote(tf_reader *r, const char *fmt, va_list ap)
{
    if (r->nnotes == TF_DAMAGE_NOTES)
        r->dropped_notes++;
    else
        vsnprintf(r->notes[r->nnotes++], sizeof r->notes[0], fmt, ap);
    compose_damage(r);
}

__attribute__((format(printf, 2, 3))) static void note(tf_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnote(r, fmt, ap);
    va_end(ap);
}

void tf_reader_note(tf_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vnote(r, fmt, ap);
    va_end(ap);
}

/* Completes the latest note about a corrupt frame once a frame reads again. */
static void note_resumed(tf_reader *r)
{
    if (!r->resume_pending)
        return;
    r->resume_pending = 0;
    if (r->dropped_notes == 0 && r->nnotes) {
        char *last = r->notes[r->nnotes - 1];
        size_t n = strlen(last);
        snprintf(last + n, sizeof r->notes[0] - n, ", resumed at frame %llu",
                 (unsigned long long)r->frame_index);
        compose_damage(r);
    }
}

/* The current frame's records are all used (or none will be). */
static void frame_done(tf_reader *r)
{
    r->buf_pos = r->buf_len = 0;
    r->item_pos = r->nitems = 0;
    r->run.p = r->run.end = NULL;
}

static void frame_corrupt(tf_reader *r, const char *why)
{
    r->st.corrupt_frames++;
    note(r, "frame %llu corrupt (%s)", (unsigned long long)r->frame_index, why);
    r->resume_pending = 1;
    frame_done(r);
}

/* ------------------------------------------------------------ frames */

static const uint8_t zstd_magic[4] = { 0x28, 0xB5, 0x2F, 0xFD };

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int magic_at(const tf_reader *r, size_t off)
{
    return r->size - off >= 4 && memcmp(r->data + off, zstd_magic, 4) == 0;
}

/* The file ends within the magic of a frame that was being written. */
static int cut_in_magic(const tf_reader *r, size_t off)
{
    return r->size - off < 4 && memcmp(r->data + off, zstd_magic, r->size - off) == 0;
}

static size_t next_magic(const tf_reader *r, size_t from)
{
    if (from >= r->size)
        return r->size;
    const uint8_t *p = memmem(r->data + from, r->size - from, zstd_magic, 4);
    return p ? (size_t)(p - r->data) : r->size;
}

static int grow_buf(tf_reader *r)
{
    if (r->buf_cap >= FRAME_CONTENT_MAX)
        return -1;
    size_t cap = r->buf_cap ? r->buf_cap * 2 : 64u << 10;
    uint8_t *buf = realloc(r->buf, cap);
    if (!buf)
        return -1;
    r->buf = buf;
    r->buf_cap = cap;
    return 0;
}

static const char *zstd_reason(size_t err)
{
    return ZSTD_getErrorCode(err) == ZSTD_error_checksum_wrong ? "checksum" : "compressed data";
}

/* Decompresses the frame at r->off.  A frame the file cuts short is only
 * taken as truncation when no frame follows it; otherwise it is damage. */
static int decompress_frame(tf_reader *r, size_t *frame_at, const char **why)
{
    size_t at = *frame_at, done = 0;   /* the frame's bytes decompressed so far */
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->buf_len = r->buf_pos = 0;
    for (;;) {
        if (r->buf_len == r->buf_cap && grow_buf(r) < 0) {
            *why = "too large";
            return FRAME_BAD;
        }
        ZSTD_inBuffer in = { r->data + at + done, r->size - at - done, 0 };
        ZSTD_outBuffer out = { r->buf + r->buf_len, r->buf_cap - r->buf_len, 0 };
        size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
        r->buf_len += out.pos;
        done += in.pos;
        if (ZSTD_isError(ret)) {
            *why = zstd_reason(ret);
            return FRAME_BAD;
        }
        if (ret == 0) {
            r->off = at + done;
            return FRAME_WHOLE;
        }
        if (in.pos == in.size && out.pos < out.size) {
            if (r->in && tf_input_live(r))
                return FRAME_WAIT;  /* the rest is being written */
            /* A window that ends inside the frame while the file goes on
             * (a segment file read through its window, which grows by
             * steps: every frame across the first 1 MiB of a segment read
             * as corrupt, and the rest of it as not a frame): read on,
             * the stream's state kept.  The window may move: the frame
             * then starts at r->off. */
            if (r->in && tf_input_extend(r)) {
                at = *frame_at = r->off;
                continue;
            }
            /* Cut short, and yet a frame or a later segment follows. */
            if (next_magic(r, at + 1) < r->size || (r->in && tf_input_has_next(r))) {
                *why = "incomplete";
                return FRAME_BAD;
            }
            r->off = r->size;
            return FRAME_CUT;
        }
    }
}

/* A column block (FORMAT.md section 15) in r->buf is decoded whole into
 * the items its records are read from (read_record): events already
 * decoded, definitions as their place in the block, which stays in r->buf.
 * A block the file cuts short gives no records: its columns are only whole
 * together. */
static int expand_block(tf_reader *r, int outcome, const char **why)
{
    r->item_pos = r->nitems = 0;
    tf_cursor c = { r->buf, r->buf + r->buf_len, 0 };
    if (tf_get_uv(&c) != TF_REC_COLUMNS || c.bad)
        return outcome;
    if (outcome == FRAME_CUT) {
        r->buf_len = 0;
        return outcome;
    }
    uint64_t len = tf_get_uv(&c);
    if (c.bad || len != (uint64_t)(c.end - c.p)) {
        *why = "column block header";
        return FRAME_BAD;
    }
    if (!r->colstate && !(r->colstate = calloc(1, sizeof *r->colstate))) {
        *why = "out of memory";
        return FRAME_BAD;
    }
    if (tf_columns_decode_items(r->colstate, c.p, len, &r->items, &r->nitems, &r->items_cap, why) < 0) {
        r->nitems = 0;
        return FRAME_BAD;
    }
    r->items_base = (size_t)(c.p - r->buf);
    r->buf_pos = r->buf_len;     /* the frame's records are the items */
    r->st.column_blocks++;
    return outcome;
}

/* A skippable frame at `at` that does not end inside the window. */
static int skippable_past(const tf_reader *r, size_t at)
{
    return r->size - at >= 8 && (le32(r->data + at) & ~0xFu) == SKIPPABLE_MAGIC &&
           le32(r->data + at + 4) >= r->size - at - 8;
}

/* Loads the next frame into r->buf.  Skippable frames are stepped over;
 * bytes that are not a frame, and frames that fail, are reported as corrupt
 * frames and the search resumes at the next frame magic. */
static int load_frame(tf_reader *r)
{
    for (;;) {
        if (r->off >= r->size) {
            if (r->in && tf_input_more(r))
                continue;
            return FRAME_NONE;
        }
        size_t at = r->off;
        /* Following a log: a frame (or a skippable frame, or the magic) that
         * does not end inside the window is waited for. */
        int live = r->in && tf_input_live(r);
        /* A segment read through its window: a frame's magic or a skippable
         * frame the window cuts while the file goes on is read on (a magic
         * across the window's end read as the log cut short). */
        if (r->in && !live && (r->size - at < 8 || cut_in_magic(r, at) || skippable_past(r, at)) &&
            tf_input_extend(r))
            continue;
        if (r->size - at >= 8 && (le32(r->data + at) & ~0xFu) == SKIPPABLE_MAGIC) {
            uint64_t len = le32(r->data + at + 4);
            if (live && len >= r->size - at - 8) {
                if (tf_input_more(r))
                    continue;
                return FRAME_NONE;
            }
            r->off = len < r->size - at - 8 ? at + 8 + len : r->size;
            continue;
        }
        if (live && (r->size - at < 8 || cut_in_magic(r, at))) {
            if (tf_input_more(r))
                continue;
            return FRAME_NONE;
        }
        r->frame_index = r->frames_seen++;
        if (cut_in_magic(r, at)) {
            r->off = r->size;
            r->st.truncated = 1;
            return FRAME_NONE;
        }
        const char *why = "not a zstd frame";
        int outcome = magic_at(r, at) ? decompress_frame(r, &at, &why) : FRAME_BAD;
        if (outcome == FRAME_WHOLE || outcome == FRAME_CUT)
            outcome = expand_block(r, outcome, &why);
        if (outcome == FRAME_WAIT) {
            r->frames_seen--;
            r->off = at;
            frame_done(r);
            if (tf_input_more(r))
                continue;
            return FRAME_NONE;
        }
        if (outcome == FRAME_BAD) {
            frame_corrupt(r, why);
            r->off = next_magic(r, at + 1);
            continue;
        }
        r->frame_partial = outcome == FRAME_CUT;
        r->frame_has_bases = 0;
        r->frame_at = at;
        r->restating = 0;
        r->st.frames++;
        note_resumed(r);
        return outcome;
    }
    return FRAME_NONE;
}

/* ------------------------------------------------------------ records */

enum { NEXT_RECORD, NEXT_FRAME_END, NEXT_BAD };

/* Splits the next record off the frame buffer.  A record cut by the end of
 * the file ends the frame quietly; one that overruns a whole frame is damage. */
static inline int next_record(tf_reader *r, uint32_t *kind, tf_cursor *payload)
{
    tf_cursor c = { r->buf + r->buf_pos, r->buf + r->buf_len, 0 };
    uint64_t k = tf_get_uv(&c);
    uint64_t len = tf_get_uv(&c);
    if (c.bad || len > (uint64_t)(c.end - c.p)) {
        r->buf_pos = r->buf_len;
        return r->frame_partial ? NEXT_FRAME_END : NEXT_BAD;
    }
    if (k > UINT32_MAX)
        return NEXT_BAD;
    *kind = (uint32_t)k;
    *payload = (tf_cursor){ c.p, c.p + len, 0 };
    r->buf_pos = (size_t)(c.p + len - r->buf);
    return NEXT_RECORD;
}

/* Something already says why events may be missing before the next one:
 * segments deleted or a fork's parent (gap_pending), a damage note since the
 * last event (a frame found corrupt), an event of a kind this reader skipped
 * (it may stand for several seqs, as a PY_FREES record does for a 2.2
 * reader), or a log read from a later segment or from a CHECKPOINT, before
 * its first event. */
static int gap_explained(const tf_reader *r)
{
    return r->gap_pending || r->seq_free || r->nnotes + r->dropped_notes != r->notes_at_event ||
           (r->st.events == 0 && (r->defs.checkpoint.present || r->header.segment));
}

/* A FRAME record's seq is that of the last event written before the frame
 * (FORMAT.md section 4), and the recorder gives an event its seq and
 * encodes it under one lock: so where it is not the last event's the walk
 * met, whole frames are missing between (one overwritten, say), or one came
 * twice, and every frame around them reads as whole.  Damage, unless
 * something else explains it; the next event comes after a gap. */
static void check_frame_seq(tf_reader *r, uint64_t seq)
{
    if (seq == r->seq_seen || gap_explained(r))
        return;
    unsigned long long want = (unsigned long long)r->seq_seen + 1, got = (unsigned long long)seq;
    r->st.seq_gaps++;
    if (seq < r->seq_seen)
        note(r, "frame %llu goes back to event %llu after event %llu (seqs go back)",
             (unsigned long long)r->frame_index, got + 1, want - 1);
    else if (got == want)
        note(r, "event %llu missing (a gap in seq before frame %llu)", want, (unsigned long long)r->frame_index);
    else
        note(r, "events %llu to %llu missing (a gap in seq before frame %llu)", want, got,
             (unsigned long long)r->frame_index);
    if (seq > r->seq_seen)
        r->st.missing_events += seq - r->seq_seen;
    r->gap_pending = 1;
}

/* Seqs go up by one from event to event.  An event whose seq is not the
 * next comes after events that are not here: after a hole check_frame_seq
 * or another note reported, or one the writer wrote itself (a seq written
 * as a gap: events were lost, section 7).  A replay goes on from it with
 * partial history, as after deleted segments.  A log that starts from a
 * CHECKPOINT goes on after its seq: the state holds what came before. */
static void check_event_seq(tf_reader *r, const tf_event *e)
{
    if (e->seq != r->seq_seen + 1 && (r->st.events || !r->defs.checkpoint.present))
        r->gap_pending = 1;
    r->seq_seen = e->seq;
    r->seq_free = 0;
    r->notes_at_event = r->nnotes + r->dropped_notes;
}

static int absorb_frame_record(tf_reader *r, tf_cursor *c)
{
    tf_get_uv(c); /* the writer's frame index: ours counts damaged frames too */
    uint64_t seq = tf_get_uv(c), t = tf_get_uv(c);
    if (c->bad)
        return TF_REC_BAD;
    check_frame_seq(r, seq);
    tf_bases_frame(&r->b, seq, t);
    tf_defs_frame(&r->defs);
    r->frame_has_bases = 1;
    return TF_REC_OK;
}

/* ------------------------------------------------------------ events */

/* An event record (records.h).  1: *e is an event to return; 0: an event
 * kind this version does not know (its common fields still move the bases). */
TF_ALWAYS_INLINE int decode_event(tf_reader *r, uint32_t kind, tf_cursor *c, tf_event *e)
{
    /* The cursor runs to the frame's end, not the payload's, so that
     * records.h's varint reader takes its unrolled path (it wants ten
     * bytes left).  A field that runs past the payload leaves the cursor
     * past its end: damage, as when the cursor stopped there (the bases it
     * moved go with the frame). */
    tf_cursor wide = { c->p, r->buf + r->buf_len, 0 };
    int rc = tf_get_event(&r->b, kind, &wide, e);
    return rc < 0 || wide.p > c->end ? TF_REC_BAD : rc;
}

/* A PY_FREES record: its first py_free into e, the rest kept for the next
 * calls (next_in_run). */
static int decode_py_frees(tf_reader *r, tf_cursor *c, tf_event *e)
{
    if (tf_get_py_frees(&r->b, c, e) < 0)
        return TF_REC_BAD;
    r->run = *c;
    r->run_last = *e;
    r->run_unit = 0;
    r->run_split = 0;
    return 1;
}

/* A PY_ALLOCS record: the same with its first py_alloc. */
static int decode_py_allocs(tf_reader *r, tf_cursor *c, tf_event *e)
{
    if (tf_get_py_allocs(&r->b, c, e, &r->run_unit) < 0)
        return TF_REC_BAD;
    r->run = *c;
    r->run_last = *e;
    r->run_split = 0;
    return 1;
}

/* A PY_ALLOCS_SPLIT record (2.8): the same, the rest kept in r->split
 * (r->run only says a run is open). */
static int decode_py_allocs_split(tf_reader *r, tf_cursor *c, tf_event *e)
{
    if (tf_get_py_allocs_split(&r->b, c, e, &r->split) < 0)
        return TF_REC_BAD;
    r->run = *c;
    r->run_last = *e;
    r->run_unit = r->split.unit;
    r->run_split = 1;
    return 1;
}

/* The next event of the PY_FREES or PY_ALLOCS record being read: 1, or 0
 * when it has no more (or the rest is damaged: the frame is then corrupt). */
static int next_in_run(tf_reader *r, tf_event *e)
{
    int rc = r->run_split  ? tf_get_py_allocs_split_next(&r->split, &r->run_last, e)
             : r->run_unit ? tf_get_py_allocs_next(&r->run, &r->run_last, r->run_unit, e)
                           : tf_get_py_frees_next(&r->run, &r->run_last, e);
    if (rc <= 0) {
        r->run.p = r->run.end = NULL;
        if (rc < 0)
            frame_corrupt(r, "records");
        return 0;
    }
    r->run_last = *e;
    return 1;
}

/* ------------------------------------------------------------ the walk */

static void finish(tf_reader *r)
{
    if (r->finished)
        return;
    r->finished = 1;
    unsigned long long last = (unsigned long long)r->st.last_seq;
    if (r->st.truncated)
        note(r, "truncated after event %llu", last);
    else if (!r->st.clean_end)
        note(r, "ends after event %llu without an END record", last);
}

/* Where the payload of a HEADER record would start if the current frame
 * opened with one carrying the magic; NULL when it does not. */
static const uint8_t *another_header(const tf_reader *r)
{
    tf_cursor c = { r->buf, r->buf + r->buf_len, 0 };
    uint64_t kind = tf_get_uv(&c), len = tf_get_uv(&c);
    if (c.bad || kind != TF_REC_HEADER || len < 8 || len > (uint64_t)(c.end - c.p) || memcmp(c.p, HEADER_MAGIC, 8))
        return NULL;
    return c.p;
}

/* The next record of the file: 1; or 2 when a column block was loaded
 * (its records are items, see tf_reader_next); or 0 at the end of what is
 * readable. */
static int read_record(tf_reader *r, uint32_t *kind, tf_cursor *payload)
{
    for (;;) {
        if (r->buf_pos >= r->buf_len) {
            if (r->frame_partial) {
                r->st.truncated = 1;
                r->frame_partial = 0;
            }
            if (load_frame(r) == FRAME_NONE)
                return 0;
            if (r->nitems)
                return 2;
            continue;
        }
        int rc = next_record(r, kind, payload);
        if (rc == NEXT_RECORD)
            return 1;
        if (rc == NEXT_BAD)
            frame_corrupt(r, "records");
    }
}

/* The INFO just read says the log is a fork's child's (FORMAT.md, INFO
 * keys): blocks its parent allocated before the fork may be freed here, and
 * its first event comes after a gap in what the log knows. */
static int forked_info(const tf_reader *r)
{
    uint32_t n = tf_reader_info_count(r);
    const char *key = NULL, *value = NULL;
    return n && tf_reader_info(r, n - 1, &key, &value) && key && !strcmp(key, "forked");
}

/* An event about to be returned: its place in the seqs, the counts. */
TF_ALWAYS_INLINE int hand_out(tf_reader *r, tf_event *e)
{
    check_event_seq(r, e);
    r->st.events++;
    r->st.last_seq = e->seq;
    if (r->gap_pending) {
        e->flags |= TF_EVENT_AFTER_GAP;
        r->gap_pending = 0;
    }
    if (e->kind == TF_EV_END)
        r->st.clean_end = 1;
    return 1;
}

static int next_slow(tf_reader *r, tf_event *e);

/* Most calls hand out the next event of a decoded column block: that case
 * alone, before the walk and without its frame (the walk's register saves
 * and tests were about a tenth of a column reader's instructions). */
int tf_reader_next(tf_reader *r, tf_event *e)
{
    if (r->item_pos < r->nitems && !r->run.p && r->frame_has_bases && !r->finished &&
        r->items[r->item_pos].kind >= 32) {
        r->st.waiting = 0;
        tf_event_copy(e, &r->items[r->item_pos++]);
        return hand_out(r, e);
    }
    return next_slow(r, e);
}

static __attribute__((noinline)) int next_slow(tf_reader *r, tf_event *e)
{
    uint32_t kind;
    tf_cursor c;
    r->st.waiting = 0;
    while (!r->finished) {
        if (r->run.p && next_in_run(r, e)) {
            r->st.events++;
            r->st.last_seq = r->seq_seen = e->seq;   /* the record's seqs are consecutive */
            return 1;
        }
        /* A column block's records come decoded (expand_block). */
        const tf_event *decoded = NULL;
        if (r->item_pos < r->nitems) {
            decoded = &r->items[r->item_pos++];
            kind = decoded->kind;
            if (kind < 32) {
                const uint8_t *p = r->buf + r->items_base + decoded->seq;
                c = (tf_cursor){ p, p + decoded->t_ns, 0 };
                decoded = NULL;
            }
        } else {
            int got = read_record(r, &kind, &c);
            if (!got)
                break;
            if (got == 2)
                continue;
        }
        int rc;
        if (kind == TF_REC_HEADER && !r->frame_has_bases) {
            /* A later segment opens (FORMAT.md section 13). */
            int how = r->in ? tf_input_opening(r, &c) : TF_INPUT_NONE;
            if (how == TF_INPUT_SKIP) {
                r->buf_pos = r->buf_len;
                r->item_pos = r->nitems;
                continue;
            }
            if (how == TF_INPUT_ABSORB) {
                r->restating = 1;
                continue;
            }
            if (how == TF_INPUT_STOP)
                break;
            /* Else a frame opening with a HEADER: another log starts here
             * (two logs joined with cat).  This run ends;
             * tf_reader_next_run reads it. */
            if (c.p == another_header(r)) {
                r->st.next_run_offset = r->frame_at;
                break;
            }
        }
        if (kind == TF_REC_FRAME)
            rc = absorb_frame_record(r, &c);
        else if (!r->frame_has_bases || kind == TF_REC_HEADER)
            rc = TF_REC_BAD;  /* every frame opens with FRAME; HEADER only opens the file */
        else if (decoded)
            rc = (tf_event_copy(e, decoded), 1);
        else if (kind == TF_EV_PY_FREES)
            rc = decode_py_frees(r, &c, e);
        else if (kind == TF_EV_PY_ALLOCS)
            rc = decode_py_allocs(r, &c, e);
        else if (kind == TF_EV_PY_ALLOCS_SPLIT)
            rc = decode_py_allocs_split(r, &c, e);
        else if (kind >= 32)
            rc = decode_event(r, kind, &c, e);
        else if (r->restating)
            rc = tf_defs_absorb_restated(&r->defs, kind, &c);
        else
            rc = tf_defs_absorb(&r->defs, kind, &c);
        if (kind == TF_REC_INFO && rc == TF_REC_OK && r->st.events == 0 && forked_info(r))
            r->gap_pending = 1;   /* a fork's child: its parent's history is not here */
        if (rc == TF_REC_NOMEM) {
            note(r, "out of memory at frame %llu", (unsigned long long)r->frame_index);
            break;
        }
        if (rc == TF_REC_BAD) {
            frame_corrupt(r, "records");
            continue;
        }
        if (kind >= 32 && rc == 0) {
            r->seq_seen = e->seq;   /* an event of a kind this reader does not know */
            r->seq_free = 1;
            continue;
        }
        if (kind >= 32 && rc == 1)
            return hand_out(r, e);
    }
    if (r->in && !r->finished && tf_input_waiting(r)) {
        r->st.waiting = 1;
        return 0;
    }
    finish(r);
    return 0;
}

/* ------------------------------------------------------------ open */

static int get_header_str(tf_reader *r, tf_cursor *c, const char **out)
{
    uint64_t n;
    const uint8_t *s = tf_get_bytes(c, &n);
    *out = c->bad ? "" : tf_arena_strndup(&r->defs.arena, s, n);
    return *out ? 0 : -1;
}

static int decode_header(tf_reader *r, tf_cursor *c, char *err, size_t errlen)
{
    return tf_reader_decode_header(r, &r->header, c, err, errlen);
}

int tf_reader_decode_header(tf_reader *r, tf_header *h, tf_cursor *c, char *err, size_t errlen)
{
    if (c->end - c->p < 8 || memcmp(c->p, HEADER_MAGIC, 8) != 0) {
        snprintf(err, errlen, "not a trace log (no header)");
        return -1;
    }
    c->p += 8;
    h->version_major = tf_get_u32(c);
    h->version_minor = tf_get_u32(c);
    /* 2.0 added column blocks (section 15) and nothing else: a 1.x log
     * reads the same. */
    if (!c->bad && (h->version_major < 1 || h->version_major > TF_VERSION_MAJOR)) {
        snprintf(err, errlen, "log format version %u.%u; this reader understands 1.x and %u.x",
                 h->version_major, h->version_minor, TF_VERSION_MAJOR);
        return -1;
    }
    h->pid = tf_get_u32(c);
    h->ppid = tf_get_u32(c);
    h->wall_start_ns = tf_get_uv(c);
    h->mono_start_ns = tf_get_uv(c);
    const char **strs[] = { &h->hostname, &h->cmdline, &h->exe, &h->tracer_version,
                            &h->settings, &h->python_version };
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (get_header_str(r, c, strs[i]) < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    h->cuda_runtime_version = (int32_t)tf_unzigzag(tf_get_uv(c));
    h->cuda_driver_version = (int32_t)tf_unzigzag(tf_get_uv(c));
    if (!c->bad && c->p < c->end) {   /* 1.2: segments */
        h->max_bytes = tf_get_uv(c);
        h->segment = tf_get_u32(c);
        h->first_seq = tf_get_uv(c);
    }
    if (c->bad) {
        snprintf(err, errlen, "not a trace log (damaged header)");
        return -1;
    }
    return 0;
}

static void blank_header(tf_header *h)
{
    h->hostname = h->cmdline = h->exe = h->tracer_version = h->settings = h->python_version = "";
}

/* Reads the HEADER that opens the first frame.  A first frame that is
 * damaged leaves the header blank and the rest of the file readable. */
static int read_header(tf_reader *r, char *err, size_t errlen)
{
    blank_header(&r->header);
    if (!magic_at(r, r->off)) {
        snprintf(err, errlen, "not a trace log (it does not start with a zstd frame)");
        return -1;
    }
    uint64_t corrupt_before = r->st.corrupt_frames;
    int outcome = load_frame(r);
    if (r->st.corrupt_frames > corrupt_before) {
        snprintf(r->notes[0] + strlen(r->notes[0]), sizeof r->notes[0] - strlen(r->notes[0]),
                 ", header lost");
        compose_damage(r);
        return 0;
    }
    uint32_t kind;
    tf_cursor c;
    if (outcome == FRAME_NONE || next_record(r, &kind, &c) != NEXT_RECORD ||
        kind != TF_REC_HEADER) {
        snprintf(err, errlen, "not a trace log (no header)");
        return -1;
    }
    return decode_header(r, &c, err, errlen);
}

tf_reader *tf_reader_alloc(char *err, size_t errlen)
{
    tf_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->dctx = ZSTD_createDCtx())) {
        snprintf(err, errlen, "out of memory");
        free(r);
        return NULL;
    }
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, WINDOW_LOG_MAX);
    return r;
}

int tf_reader_read_header(tf_reader *r, char *err, size_t errlen)
{
    return read_header(r, err, errlen);
}

tf_reader *tf_reader_open_mem(const void *data, size_t len, char *err, size_t errlen)
{
    tf_reader *r = tf_reader_alloc(err, errlen);
    if (!r)
        return NULL;
    r->data = data;
    r->size = len;
    if (read_header(r, err, errlen) < 0) {
        tf_reader_close(r);
        return NULL;
    }
    return r;
}

tf_reader *tf_reader_open(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) < 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (sb.st_size == 0) {
        close(fd);
        snprintf(err, errlen, "not a trace log (empty file)");
        return NULL;
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "%s", strerror(errno));
        return NULL;
    }
    tf_reader *r = tf_reader_open_mem(map, (size_t)sb.st_size, err, errlen);
    if (!r) {
        munmap(map, (size_t)sb.st_size);
        return NULL;
    }
    r->map = map;
    if (r->header.max_bytes) {
        /* A log in segments: read through a window, one file after another. */
        tf_reader_close(r);
        int again = 0;
        return tf_input_open(path, 0, &again, err, errlen);
    }
    return r;
}

int tf_reader_next_run(tf_reader *r)
{
    size_t at = (size_t)r->st.next_run_offset;
    if (!at)
        return 0;
    /* Everything of the run before goes: the next log defines its own ids. */
    tf_defs_free(&r->defs);
    memset(&r->defs, 0, sizeof r->defs);
    memset(&r->st, 0, sizeof r->st);
    memset(&r->header, 0, sizeof r->header);
    r->off = at;
    frame_done(r);
    r->frame_partial = r->frame_has_bases = 0;
    tf_bases_frame(&r->b, 0, 0);
    r->nnotes = r->dropped_notes = 0;
    r->resume_pending = r->finished = 0;
    r->gap_pending = r->seq_free = 0;
    r->seq_seen = 0;
    r->notes_at_event = 0;
    r->damage[0] = '\0';
    memset(r->notes, 0, sizeof r->notes);
    char err[256];
    if (read_header(r, err, sizeof err) < 0) {
        note(r, "a second log starts at byte %zu but its header does not read: %s", at, err);
        r->finished = 1;
    }
    return 1;
}

void tf_reader_close(tf_reader *r)
{
    if (!r)
        return;
    if (r->map)
        munmap(r->map, r->size);
    tf_input_free(r->in);
    ZSTD_freeDCtx(r->dctx);
    free(r->buf);
    free(r->items);
    free(r->colstate);
    tf_defs_free(&r->defs);
    free(r);
}

const tf_read_status *tf_reader_status(const tf_reader *r)
{
    return &r->st;
}

const char *tf_reader_damage(const tf_reader *r)
{
    return r->nnotes ? r->damage : NULL;
}

const tf_header *tf_reader_header(const tf_reader *r)
{
    return &r->header;
}
