/*
 * reader_input.c - reading a log through a window: one being written
 * (tf_reader_open_follow), and one cut into segment files (FORMAT.md
 * section 13).
 *
 * The reader proper (reader.c) decodes whatever lies in r->data[0, size);
 * here that is a window filled with read() from the current segment's file,
 * the bytes already decoded dropped from its front.  Nothing is mapped, so a
 * file that is truncated under us (an exec that failed takes its END back)
 * costs a short read, not a SIGBUS, and memory stays about one frame.
 *
 * While the writer may still append, a frame that does not end inside the
 * window is being written: the reader waits for it (tf_input_live).  A
 * segment is complete once a later one exists (the recorder writes its last
 * frame before it creates the next), or once the caller says the writer is
 * gone (tf_reader_final); its end then reads with the usual damage rules.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "reader_internal.h"

#define READ_STEP (1u << 20)
/* A frame is at most 64 MiB of content; compressed, a little more at worst.
 * A "frame" still incomplete at this size is damage, not a slow writer. */
#define WINDOW_MAX (80u << 20)
/* Following: how often to look for a later segment by listing the directory
 * (a lagging follower finds the next one it can read). */
#define SCAN_INTERVAL_NS 1000000000ull

struct tf_input {
    int fd;                    /* the current segment's file */
    int follow;                /* the log is being written */
    int final;                 /* tf_reader_final: the writer is gone */
    int has_next;              /* a later segment exists: this one is complete */
    int was_live;
    int opening;               /* the window starts with a later segment's HEADER */
    int stopped;               /* a file that is not this log's: reading ended */
    uint32_t segment;          /* the current segment's number */
    uint32_t next;             /* the segment to open next (has_next) */
    uint32_t pid;              /* the log's identity, from its first header */
    uint64_t wall_start_ns;
    uint64_t max_bytes;
    uint64_t last_scan_ns;
    uint8_t *win;
    size_t cap;
    char log_path[PATH_MAX];   /* the first segment's path */
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int tf_input_live(const tf_reader *r)
{
    const tf_input *in = r->in;
    return in->follow && !in->final && !in->has_next && !in->stopped && r->size < WINDOW_MAX;
}

int tf_input_has_next(const tf_reader *r)
{
    return r->in->has_next;
}

int tf_input_waiting(const tf_reader *r)
{
    const tf_input *in = r->in;
    return in->follow && !in->final && !in->stopped && !r->st.clean_end;
}

/* Append what the file gained to the window; the number of bytes read. */
static size_t read_more(tf_reader *r)
{
    tf_input *in = r->in;
    if (r->off) {   /* drop what is decoded: memory stays about one frame */
        memmove(in->win, in->win + r->off, r->size - r->off);
        r->size -= r->off;
        r->off = 0;
    }
    if (in->cap - r->size < READ_STEP / 4) {
        size_t cap = in->cap ? in->cap * 2 : READ_STEP;
        while (cap - r->size < READ_STEP / 4)
            cap *= 2;
        uint8_t *w = realloc(in->win, cap);
        if (!w)
            return 0;
        in->win = w;
        in->cap = cap;
    }
    ssize_t n;
    do
        n = read(in->fd, in->win + r->size, in->cap - r->size);
    while (n < 0 && errno == EINTR);
    r->data = in->win;
    if (n <= 0)
        return 0;
    r->size += (size_t)n;
    return (size_t)n;
}

int tf_input_extend(tf_reader *r)
{
    return !r->in->stopped && r->size < WINDOW_MAX && read_more(r) > 0;
}

static void read_to_end(tf_reader *r)
{
    while (read_more(r) && r->size < WINDOW_MAX)
        ;
}

/* The lowest segment after k on disk: k + 1 by name, else (a lagging
 * reader, whose next segment was deleted) found by listing the directory.
 * 0 when there is none. */
static uint32_t find_after(tf_input *in, uint32_t k)
{
    char path[PATH_MAX];
    struct stat st;
    if (tf_segment_path(path, sizeof path, in->log_path, k + 1) == 0 && stat(path, &st) == 0)
        return k + 1;
    if (in->follow && !in->final) {
        uint64_t now = mono_ns();
        if (now - in->last_scan_ns < SCAN_INTERVAL_NS)
            return 0;
        in->last_scan_ns = now;
    }
    char dir[PATH_MAX];
    const char *slash = strrchr(in->log_path, '/');
    size_t n = slash ? (size_t)(slash - in->log_path) : 0;
    if (!slash)
        memcpy(dir, ".", 2);
    else if (n == 0)
        memcpy(dir, "/", 2);
    else {
        memcpy(dir, in->log_path, n);
        dir[n] = '\0';
    }
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    uint32_t best = 0;
    for (struct dirent *e; (e = readdir(d));) {
        uint32_t j = tf_segment_number(e->d_name, in->log_path);
        if (j > k && (!best || j < best))
            best = j;
    }
    closedir(d);
    return best;
}

/* Whether a later segment can belong to this log.  Not when it has no
 * budget (a log of one file), nor after its END (the writer's last
 * record): a file named as a later segment is then another log's, left
 * under the same name (a run before, by a version that did not take
 * another name; a file made after this log started).  Read on, it ended
 * the log with a note that this was not its segment, and a follower of a
 * log without a budget took its current file for complete and stopped. */
static int later_segments(const tf_reader *r)
{
    return r->in->max_bytes && !r->st.clean_end;
}

static int open_segment(tf_reader *r, uint32_t j)
{
    tf_input *in = r->in;
    char path[PATH_MAX];
    if (tf_segment_path(path, sizeof path, in->log_path, j) < 0)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;   /* deleted since we saw it: look again */
    close(in->fd);
    in->fd = fd;
    in->segment = j;
    in->has_next = 0;
    in->opening = 1;
    r->off = r->size = 0;
    return 0;
}

int tf_input_more(tf_reader *r)
{
    tf_input *in = r->in;
    if (in->stopped)
        return 0;
    if (read_more(r))
        return 1;
    if (!in->has_next && later_segments(r) && (in->next = find_after(in, in->segment))) {
        /* The writer finished this segment before it created a later one:
         * what it still holds for us is all there is. */
        in->has_next = 1;
        read_to_end(r);
        return 1;
    }
    int live = tf_input_live(r);
    if (live != in->was_live) {
        in->was_live = live;
        return 1;   /* the end of the window reads as final now */
    }
    if (r->off < r->size || !in->has_next)
        return 0;
    /* This segment is read: on to the next.  One deleted in between is
     * looked for again. */
    for (int tries = 0; tries < 3; tries++) {
        if (open_segment(r, in->next) == 0) {
            in->was_live = tf_input_live(r);
            read_more(r);
            return 1;
        }
        in->has_next = 0;
        in->last_scan_ns = 0;
        if (!(in->next = find_after(in, in->segment)))
            return 0;
        in->has_next = 1;
    }
    return 0;
}

int tf_input_opening(tf_reader *r, tf_cursor *c)
{
    tf_input *in = r->in;
    if (!in->opening)
        return TF_INPUT_NONE;
    in->opening = 0;
    tf_header h;
    /* Empty unless a reason is written: the decoder writes one only when
     * the header does not decode, and a header of another run's log (a
     * segment file left beside a log of the same name) decodes; an
     * uninitialised buffer put stack bytes into the note, which broke the
     * UTF-8 of every report that printed it. */
    char err[160] = "";
    memset(&h, 0, sizeof h);
    int bad = tf_reader_decode_header(r, &h, c, err, sizeof err) < 0;
    if (!bad && (h.pid != in->pid || h.wall_start_ns != in->wall_start_ns || h.segment != in->segment)) {
        snprintf(err, sizeof err, "another run's (pid %" PRIu32 ", segment %" PRIu32 "; this log: pid %" PRIu32 ")",
                 h.pid, h.segment, in->pid);
        bad = 1;
    }
    if (bad) {
        tf_reader_note(r, "segment %u is not a segment of this log%s%s: read no further", in->segment,
                       *err ? ": " : "", err);
        in->stopped = 1;
        return TF_INPUT_STOP;
    }
    tf_read_status *st = &r->st;
    uint32_t prev = st->segment;
    uint64_t expected = st->last_seq + 1;
    st->segment = h.segment;
    st->segment_first_seq = h.first_seq;
    if (h.segment == prev + 1 && h.first_seq == expected)
        return TF_INPUT_SKIP;   /* its definitions are all known already */
    /* Events missing with no segment deleted (the segment before lost its
     * last frames) are no deletion: the walk's seq check reports them as
     * damage at this segment's FRAME (reader.c, check_frame_seq). */
    if (h.first_seq > expected && h.segment > prev + 1) {
        st->gaps++;
        st->gap_seq = h.first_seq;
        st->lost_events += h.first_seq - expected;
        r->gap_pending = 1;
        tf_reader_note(r,
                       "events %llu to %llu were deleted with segments %u to %u (the log is kept within "
                       "%llu bytes)",
                       (unsigned long long)expected, (unsigned long long)h.first_seq - 1, prev + 1,
                       h.segment - 1, (unsigned long long)in->max_bytes);
    }
    return TF_INPUT_ABSORB;   /* what the lost part defined is restated here */
}

void tf_input_free(tf_input *in)
{
    if (!in)
        return;
    if (in->fd >= 0)
        close(in->fd);
    free(in->win);
    free(in);
}

/* Is the window's first frame all there?  (Following: the writer may be in
 * the middle of it.) */
static int first_frame_complete(const tf_reader *r)
{
    size_t n = ZSTD_findFrameCompressedSize(r->data, r->size);
    return !ZSTD_isError(n) && n <= r->size;
}

static tf_reader *open_at(const char *path, int follow, int *again, char *err, size_t errlen)
{
    tf_input *in = calloc(1, sizeof *in);
    if (!in || strlen(path) >= sizeof in->log_path) {
        free(in);
        snprintf(err, errlen, "%s", in ? "path too long" : "out of memory");
        return NULL;
    }
    in->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (in->fd < 0) {
        *again = follow && errno == ENOENT;
        snprintf(err, errlen, "%s", strerror(errno));
        free(in);
        return NULL;
    }
    in->follow = follow;
    tf_reader *r = tf_reader_alloc(err, errlen);
    if (!r) {
        tf_input_free(in);
        return NULL;
    }
    r->in = in;
    /* The first frame, whole, before anything is decoded. */
    while (read_more(r) && !first_frame_complete(r) && r->size < WINDOW_MAX)
        ;
    if (follow && !first_frame_complete(r) && r->size < WINDOW_MAX &&
        (r->size < 4 || !memcmp(r->data, "\x28\xb5\x2f\xfd", 4))) {
        *again = 1;
        snprintf(err, errlen, "%s", r->size ? "its first frame is being written" : "empty file");
        tf_reader_close(r);
        return NULL;
    }
    if (!r->size) {
        snprintf(err, errlen, "not a trace log (empty file)");
        tf_reader_close(r);
        return NULL;
    }
    in->was_live = tf_input_live(r);
    if (tf_reader_read_header(r, err, errlen) < 0) {
        tf_reader_close(r);
        return NULL;
    }
    const tf_header *h = &r->header;
    in->pid = h->pid;
    in->wall_start_ns = h->wall_start_ns;
    in->max_bytes = h->max_bytes;
    in->segment = h->segment;
    r->st.segment = h->segment;
    r->st.segment_first_seq = h->segment ? h->first_seq : 1;
    if (tf_segment_log_path(in->log_path, sizeof in->log_path, path, h->segment) < 0) {
        /* A segment renamed or copied alone: nothing else to look for. */
        snprintf(in->log_path, sizeof in->log_path, "%s", path);
        in->max_bytes = 0;
    }
    return r;
}

tf_reader *tf_input_open(const char *path, int follow, int *again, char *err, size_t errlen)
{
    *again = 0;
    tf_reader *r = open_at(path, follow, again, err, errlen);
    if (!r || !r->header.segment)
        return r;
    /* Given a later segment: read from the first when it is there. */
    const tf_input *in = r->in;
    struct stat st;
    if (strcmp(in->log_path, path) && stat(in->log_path, &st) == 0) {
        int again2 = 0;
        char err2[256];
        tf_reader *first = open_at(in->log_path, follow, &again2, err2, sizeof err2);
        if (first && first->header.pid == r->header.pid &&
            first->header.wall_start_ns == r->header.wall_start_ns && first->header.segment == 0) {
            tf_reader_close(r);
            return first;
        }
        tf_reader_close(first);
    }
    tf_reader_note(r, "the log starts at event %llu, in segment %u: what came before was deleted%s",
                   (unsigned long long)r->header.first_seq, r->header.segment,
                   r->header.max_bytes ? " (the log is kept within its byte budget)" : "");
    r->st.gaps = 1;
    r->st.gap_seq = r->header.first_seq;
    r->gap_pending = 1;
    r->st.lost_events = r->header.first_seq ? r->header.first_seq - 1 : 0;
    return r;
}

tf_reader *tf_reader_open_follow(const char *path, int *again, char *err, size_t errlen)
{
    return tf_input_open(path, 1, again, err, errlen);
}

void tf_reader_final(tf_reader *r)
{
    if (!r->in || r->in->final)
        return;
    r->in->final = 1;
    read_to_end(r);
}

const char *tf_reader_log_path(const tf_reader *r)
{
    return r->in && r->in->log_path[0] ? r->in->log_path : NULL;
}
