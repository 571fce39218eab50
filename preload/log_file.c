/*
 * log_file.c - create the log safely, append frames, fail quietly (see
 * log_file.h for why no descriptor is kept).
 */
#include "log_file.h"
#include "columns.h"
#include "config.h"
#include "fault_mask.h"
#include "private_files.h"
#include "rankset.h"
#include "recorder_core.h"
#include "warn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Creations tried before giving up (each fails only when another process
 * takes the name first), and the highest number a name gets. */
#define MAX_ATTEMPTS 1000
#define MAX_NUMBER (1u << 24)
/* Segments: a new one once the current holds budget / SEGMENTS_PER_BUDGET. */
#define SEGMENTS_PER_BUDGET 8
#define KEPT_MAX 64

static int created;         /* the file exists, and is this one: */
static dev_t file_dev;
static ino_t file_ino;
static char path[4096];     /* the current segment's file */
static char log_name[4096]; /* the log's own name: segment 0's file */

/* Segments written and still on disk after the first (the current one
 * last), oldest first; and what the first one holds. */
typedef struct kept_segment { uint32_t number; dev_t dev; ino_t ino; uint64_t bytes; } kept_segment;
static kept_segment kept[KEPT_MAX];
static unsigned nkept;
static uint32_t segment;     /* the current segment's number */
static uint64_t first_bytes; /* bytes in segment 0 */
static int rotation_off;     /* given up: the log grows past the budget */
static int failed;
static uint8_t *frame;      /* the compressed frame: mapped pages (a signal
                               handler may write the log) */
static size_t frame_cap;
/* The column-block encoder (TRACE_COLUMNS), mapped at the first frame: its
 * memory is fixed (columns.h) apart from its columns, which grow to about a
 * frame's records. */
static tf_colenc *colenc;
static int colenc_failed;

/* A chunk compressed into frame: as a column block when it makes one. */
static size_t compress(const tf_chunk *c, void *cctx)
{
    const trace_config *cfg = trace_config_get();
    if (cfg->columns && !colenc && !colenc_failed) {
        if (cfg->cpu_baseline)
            tf_rankset_portable(1);   /* TRACE_CPU_FEATURES=baseline: no POPCNT, no PDEP */
        if (!(colenc = tf_colenc_new()))
            colenc_failed = 1;   /* no memory for it: frames stay records */
    }
    return tf_chunk_compress_columns(c, cfg->columns ? colenc : NULL, cfg->time_unit_ns, cctx,
                                     LOG_COMPRESSION_LEVEL, frame, frame_cap);
}

/* The cause of the last warning given for a log, shared by every process
 * forked from the one that started the tracer (a page mapped shared at
 * start, so siblings see it too, not only children): the directory the
 * failing file was in, what failed and why.  A process whose log fails the
 * same way says nothing: "warn once".  A multiprocessing Pool of 4 fork
 * workers under an unwritable TRACE_OUTPUT printed 5 lines (each worker's
 * own log failed too, when the parent had recorded nothing before forking).
 * An exec'd image starts with its own page (multiprocessing's spawn and
 * forkserver: each process started by exec warns once; docs/guarantees.md).
 * Without the page (mmap failed), this process's copy, inherited by fork. */
typedef struct said_cause {
    _Atomic int lock;
    int set, err;
    char what[32];
    char dir[sizeof path];
} said_cause;
static said_cause said_here, *said = &said_here;

static void said_map(void)
{
    void *p = mmap(NULL, sizeof *said, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED)
        said = p;
}

/* 1 when the cause was said already (by this process or one of its fork
 * family); else it is noted as said, and 0.  A lock held too long (its
 * holder killed in between) is passed over: one line too many at worst. */
static int said_before(const char *file, const char *what, int err)
{
    char dir[sizeof path];
    const char *slash = strrchr(file, '/');
    size_t n = slash ? (size_t)(slash - file) : 0;
    snprintf(dir, sizeof dir, "%.*s", (int)(n < sizeof dir ? n : sizeof dir - 1), file);
    int locked = 0;
    for (int tries = 0; tries < 10000 && !(locked = !atomic_exchange(&said->lock, 1)); tries++)
        sched_yield();
    int same = said->set && said->err == err && !strcmp(said->what, what) && !strcmp(said->dir, dir);
    if (!same && locked) {
        snprintf(said->what, sizeof said->what, "%s", what);
        snprintf(said->dir, sizeof said->dir, "%s", dir);
        said->err = err;
        said->set = 1;
    }
    if (locked)
        atomic_store(&said->lock, 0);
    return same;
}

/* err: an errno, or -1 for "not a regular file". */
static void give_up_because(const char *what, int err, const char *why)
{
    failed = 1;
    rec_stop();
    const char *file = path[0] ? path : log_path();
    if (!said_before(file, what, err))
        trace_warn("%s %s: %s; tracing stopped, the program continues", what, file, why);
}

static void give_up(const char *what, int err)
{
    give_up_because(what, err, strerror(err));
}

const char *log_path(void)
{
    return log_name[0] ? log_name : trace_config_get()->output;
}

static int out_of_descriptors(int err)
{
    return err == EMFILE || err == ENFILE || err == EINTR;
}

/* Whether name n exists; 0 as well when it cannot be looked at (creating
 * it says why). */
static int name_taken(unsigned n)
{
    static char name[sizeof path];   /* under the flusher's token, as create */
    struct stat st;
    return trace_config_output_path(name, sizeof name, n) == 0 && lstat(name, &st) == 0;
}

/* A free number above taken number n: the first free one after a run of
 * taken ones, found by doubling then halving.  Every run of a pattern
 * without %p, every image of an exec chain, adds a name; trying each in
 * turn made a start open hundreds of names, and found none after a
 * thousand.  0 when none is left below MAX_NUMBER. */
static unsigned free_number_after(unsigned n)
{
    unsigned lo = n, hi = n + 1, step = 1;   /* lo taken; hi to be looked at */
    while (name_taken(hi)) {
        lo = hi;
        step = step < MAX_NUMBER / 2 ? step * 2 : step;
        if (hi > MAX_NUMBER - step)
            return 0;
        hi += step;
    }
    while (hi - lo > 1) {                    /* lo taken, hi free */
        unsigned mid = lo + (hi - lo) / 2;
        if (name_taken(mid))
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* The file work of one write: open (create: a new file by that name;
 * else the file we created, checked by device and inode), append, close.
 * Run by pf_run, so possibly on the helper thread (private_files.h): no
 * warning and no state of ours changed here, only what happened. */
typedef struct file_job {
    const char *name;
    int create;
    const void *data;
    size_t n;
    dev_t dev;        /* in: the file expected (not create); out: the file */
    ino_t ino;
    int open_err;     /* errno of the open, ESTALE for another file */
    int write_err;    /* errno of the write */
    int made;         /* create: the file was made (dev, ino are its) */
    off_t cut;        /* > 0: cut the file back to this size first (not longer) */
    size_t done;      /* out: bytes written */
} file_job;

/* A program closing every descriptor in a loop can close ours between
 * our open and our check, or our check and our write, again and again:
 * each try is a few microseconds. */
#define OPEN_TRIES 64
#define WRITE_TRIES 1024

/* The size of the calling process's descriptor table (FDSize in
 * /proc/self/status: it starts at 64 and doubles as numbers above it are
 * taken), or 0 when it cannot be read. */
static long fd_table_size(void)
{
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nFDSize:");
    return p ? strtol(p + 8, NULL, 10) : 0;
}

/* In the program's table (no helper), the descriptor goes up to a high
 * number for its writes: a program that closes every descriptor and opens
 * its own gets the lowest free numbers, so the instant between our check
 * and our write no longer meets one of its files, unless it holds half
 * the table.  Within the table's present size, its upper half: a number
 * past it grows the table, for good, and a table shared with another
 * thread (the flusher's) grows only after an RCU grace period, 10 to 30 ms
 * on this project's machines, paid by every process that ended by _exit,
 * exec or a signal (a Pool with maxtasksperchild=1 ran 2.9 times slower
 * when this went to 1024).  Nor in the upper half of a small limit; where
 * no number is free there, it stays. */
static void move_high(pf_file *f)
{
    struct rlimit rl;
    if (pf_in_private_table() || getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    long floor = rl.rlim_cur >= 2048 ? 1024 : (long)rl.rlim_cur / 2;
    long table = fd_table_size();
    if (table > 0 && table / 2 < floor)
        floor = table / 2;
    if (f->fd >= floor)
        return;
    pf_file high = { .fd = fcntl(f->fd, F_DUPFD_CLOEXEC, floor), .dev = f->dev, .ino = f->ino };
    if (high.fd < 0)
        return;
    if (!pf_still_ours(&high)) {
        pf_close(&high);   /* the low number was swapped before the dup: left alone */
        return;
    }
    pf_close(f);
    *f = high;
}

/* Open the job's file: a descriptor on it, its identity checked, or -1 with
 * open_err set.  In the program's table a number can change hands between
 * our open and our fstat (the program closing every descriptor and opening
 * its own): what the number holds is compared with what the name names
 * (lstat: O_NOFOLLOW opened no link).  The same file: the descriptor is
 * ours, and it is the log's, or another file now has the log's name
 * (ESTALE).  Not the same: our descriptor was closed and the number is the
 * program's now, not to be closed; open again. */
static int job_open(file_job *j, pf_file *f, int create)
{
    int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
    int known = !create;   /* the log's identity: the job's, or the file just created */
    for (int tries = 0; tries < OPEN_TRIES; tries++, flags &= ~(O_CREAT | O_EXCL)) {
        f->fd = open(j->name, flags, 0600);
        if (f->fd < 0) {
            j->open_err = errno;
            return -1;
        }
        struct stat held, named;
        if (fstat(f->fd, &held) != 0)
            continue;   /* closed already: nothing of ours to close */
        f->dev = held.st_dev;
        f->ino = held.st_ino;
        if (lstat(j->name, &named) != 0) {
            j->open_err = errno;
            pf_close(f);
            return -1;
        }
        if (!known) {   /* O_EXCL made it: the name names our new file */
            j->dev = named.st_dev;
            j->ino = named.st_ino;
            known = j->made = 1;
        }
        if (named.st_dev != held.st_dev || named.st_ino != held.st_ino)
            continue;   /* the number changed hands */
        if (held.st_dev != j->dev || held.st_ino != j->ino) {
            j->open_err = ESTALE;   /* replaced by another file: not ours to write */
            pf_close(f);
            return -1;
        }
        move_high(f);
        return 0;
    }
    j->open_err = EINTR;   /* the number kept changing hands: later */
    return -1;
}

static int write_file_job(void *arg)
{
    file_job *j = arg;
    pf_file f;
    if (job_open(j, &f, j->create) < 0)
        return -1;
    if (j->cut > 0) {
        struct stat st;
        int err = fstat(f.fd, &st) != 0 ? errno : st.st_size < j->cut ? ESTALE
                : ftruncate(f.fd, j->cut) != 0 ? errno : 0;
        if (err) {   /* never longer: the file is not what we wrote */
            j->write_err = err;
            pf_close(&f);
            return -1;
        }
    }
    size_t done = 0;
    int open = 1;
    for (int tries = 0; tries < WRITE_TRIES; tries++) {
        if (!open) {
            /* The program closed our number (and may hold it now): the
             * rest goes through a new descriptor; O_APPEND puts it after
             * what got out. */
            if (job_open(j, &f, 0) < 0) {
                if (j->open_err != EINTR)
                    break;
                j->open_err = 0;
                continue;
            }
            open = 1;
        }
        size_t wrote = 0;
        int rc = pf_write_all(&f, (const char *)j->data + done, j->n - done, &wrote);
        done += wrote;
        j->done = done;
        if (rc != -EBADF) {
            j->write_err = -rc;
            pf_close(&f);
            return rc;
        }
        open = 0;
    }
    /* Out of tries (a program closing every descriptor over and over), or
     * the file could not be opened again.  Nothing out: the frame waits
     * for the next flush (EINTR, like a process out of descriptors).  Part
     * of it out: a write that failed, for the frame must not be written
     * again whole after its own beginning. */
    int err = j->open_err ? j->open_err : EINTR;
    j->open_err = done ? 0 : err;
    j->write_err = done ? err : 0;
    return -1;
}

/* A write past RLIMIT_FSIZE sends SIGXFSZ to the writing thread, and its
 * default action ends the process: where the job runs on the program's own
 * thread (no helper: an ending by _exit, exec or a signal, a fork's child),
 * a program that limits its files' size and restores SIG_DFL died of our
 * write (exit status 153 after os._exit(0)).  The signal is held during the
 * job and, when our write raised it, taken back; the write fails with EFBIG
 * as it would under SIG_IGN, and the log says so once.  The helper thread
 * blocks every signal. */
static int run_file_job(void *arg)
{
    if (pf_in_private_table())
        return write_file_job(arg);
    sigset_t xfsz, before, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    if (own_sigmask(SIG_BLOCK, &xfsz, &before) != 0)
        return write_file_job(arg);
    int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ);
    int rc = write_file_job(arg);
    if (!was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ)) {
        struct timespec now = { 0, 0 };
        sigtimedwait(&xfsz, NULL, &now);
    }
    own_sigmask(SIG_SETMASK, &before, NULL);
    return rc;
}

/* Segment files left under a name by another run: a log kept within a
 * budget whose first file was removed ("rm trace.tlog", then the same
 * command again) leaves its later segments (NAME.segK.EXT) behind.  A
 * budgeted log started under that name ran into one of them at its K-th
 * rotation: it could not create its segment, and its next write found the
 * other run's file where its own should be ("lost ...: Stale file
 * handle", tracing stopped).  And a reader of the new log went on into
 * the other run's files.  So, with a budget, a name beside such files is
 * taken, as one whose first file exists: nothing of the other run is
 * overwritten, moved or read as ours.  Any K: the other run kept its
 * newest segments, deleted those before.  The directory is listed with
 * getdents64 into static memory (no opendir: it allocates, and this runs
 * under the flusher's token, maybe in a signal handler), by pf_run, so in
 * the helper's table where there is one; in the program's, the listing
 * counts only if the descriptor still held the directory after it. */
static struct { uint8_t buf[8192]; } dents __attribute__((aligned(8)));

typedef struct scan_job {
    const char *log;   /* the first segment's path */
    int found;         /* out: a segment file of that name is there */
} scan_job;

static int scan_segments_job(void *arg)
{
    scan_job *s = arg;
    static char dir[sizeof path];
    const char *slash = strrchr(s->log, '/');
    size_t n = slash ? (size_t)(slash - s->log) : 0;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", n ? (int)n : 1, n ? s->log : "/");
    for (int tries = 0; tries < OPEN_TRIES; tries++) {
        pf_file f = { .fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
        struct stat st;
        if (f.fd < 0)
            return -1;   /* cannot list it: creating says what is wrong, if anything */
        if (fstat(f.fd, &st) != 0)
            continue;   /* closed already: nothing of ours to close */
        f.dev = st.st_dev;
        f.ino = st.st_ino;
        int found = 0;
        long got;
        while (!found && (got = syscall(SYS_getdents64, f.fd, dents.buf, sizeof dents.buf)) > 0) {
            for (long at = 0; at < got;) {
                /* struct linux_dirent64: ino, off, reclen, type, name */
                const uint8_t *e = dents.buf + at;
                unsigned short reclen;
                memcpy(&reclen, e + 16, sizeof reclen);
                if (tf_segment_number((const char *)e + 19, s->log)) {
                    found = 1;
                    break;
                }
                at += reclen;
            }
        }
        int ours = pf_still_ours(&f);
        pf_close(&f);
        if (ours) {
            s->found = found;
            return 0;
        }
    }
    return -1;
}

static int segments_left(const char *name)
{
    scan_job s = { .log = name };
    pf_run(scan_segments_job, &s);
    return s.found;
}

/* The first write: a free name, created, never an existing file. */
static int create(const void *data, size_t len)
{
    /* Not on the stack (4 KiB of a program's thread that flushes): writes
     * are one at a time, under the flusher's token. */
    static char name[sizeof path];
    unsigned n = 0;
    for (unsigned attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        if (trace_config_output_path(name, sizeof name, n) < 0) {
            give_up("cannot create", ENAMETOOLONG);
            return -1;
        }
        if (trace_config_get()->max_bytes && segments_left(name)) {
            if (!(n = free_number_after(n)))
                break;
            continue;
        }
        file_job j = { .name = name, .create = 1, .data = data, .n = len };
        pf_run(run_file_job, &j);
        if (j.made) {
            /* Ours from here on, even when the frame could not go in yet
             * (a later write appends to it by path). */
            snprintf(path, sizeof path, "%s", name);
            snprintf(log_name, sizeof log_name, "%s", name);
            file_dev = j.dev;
            file_ino = j.ino;
            created = 1;
            if (j.open_err && out_of_descriptors(j.open_err))
                return -EAGAIN;
            if (j.open_err || j.write_err) {
                give_up(j.open_err ? "lost" : "cannot write", j.open_err ? j.open_err : j.write_err);
                return -1;
            }
            return 0;
        }
        int err = j.open_err;
        if (out_of_descriptors(err))
            return -EAGAIN;
        /* Taken (an earlier image of this process, an old log with the
         * same pid, a symlink): a later name.  A directory: a mistake.  A
         * device, a FIFO or a socket (TRACE_OUTPUT=/dev/null): no log, and
         * no regular file made beside it (/dev/null.1 in /dev, which is
         * memory). */
        struct stat st;
        int exists = err == EEXIST && lstat(name, &st) == 0;
        if (err != EEXIST || (exists && S_ISDIR(st.st_mode))) {
            snprintf(path, sizeof path, "%s", name);
            give_up("cannot create", err == EEXIST ? EISDIR : err);
            return -1;
        }
        if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
            snprintf(path, sizeof path, "%s", name);
            give_up_because("will not write", -1, "not a regular file (a device, a FIFO or a socket)");
            return -1;
        }
        if (!(n = free_number_after(n)))
            break;
    }
    give_up("cannot create", EEXIST);
    return -1;
}

/* The log's last word when it can take no more (a full disk, a file size
 * limit, an I/O error): a frame of its own, in place of the frame that did
 * not go in, with INFO not_watched "the rest of the run: cannot write ...".
 * A user with only the log (stderr not a terminal, so nothing was said)
 * learns why it ends there; the FRAME's seq is the last event numbered, so
 * a reader notes the events of the lost frames as missing.  Only where the
 * failed write got at least the note's size out: cutting that frame off
 * gives the note room (a full disk, RLIMIT_FSIZE), and otherwise the file
 * keeps what it had (a cut frame's first events are readable).  Made in
 * static memory: under the flusher's token, maybe in a signal handler. */
static void *note_cctx;      /* log_write's compressor */
static uint64_t frames_written;

static void leave_a_note(int err, size_t out)
{
    static char value[sizeof path + 128];
    static uint8_t raw[sizeof value + 256], packed[2 * sizeof raw];
    uint64_t good = segment ? kept[nkept - 1].bytes : first_bytes;
    if (!note_cctx || good == 0 || out == 0)
        return;   /* nothing readable before it: no header to put a note after */
    snprintf(value, sizeof value, "the rest of the run: cannot write %s: %s (tracing stopped; the program went on)",
             path, strerror(err));
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t unit = trace_config_get()->time_unit_ns ? trace_config_get()->time_unit_ns : 1;
    uint64_t t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    tf_chunk c = { raw, tf_encode_info_frame(raw, sizeof raw, frames_written, rec_event_count(),
                                             t - t % unit, "not_watched", value), sizeof raw };
    size_t n = c.len && tf_chunk_bound(&c) <= sizeof packed
                   ? tf_chunk_compress(&c, note_cctx, LOG_COMPRESSION_LEVEL, packed, sizeof packed) : 0;
    if (!n || n > out)
        return;
    file_job j = { .name = path, .data = packed, .n = n, .dev = file_dev, .ino = file_ino, .cut = (off_t)good };
    pf_run(run_file_job, &j);
    if (j.write_err && j.done) {
        /* Part of the note went in: cut it off again (a cut frame at the end
         * is damage a reader reports). */
        file_job undo = { .name = path, .n = 0, .dev = file_dev, .ino = file_ino, .cut = (off_t)good };
        pf_run(run_file_job, &undo);
    }
}

/* Later writes: the file we created, by its path, or nothing. */
static int append(const void *data, size_t len)
{
    file_job j = { .name = path, .data = data, .n = len, .dev = file_dev, .ino = file_ino };
    pf_run(run_file_job, &j);
    if (j.open_err) {
        if (out_of_descriptors(j.open_err))
            return -EAGAIN;
        give_up("lost", j.open_err);
        return -1;
    }
    if (j.write_err) {
        give_up("cannot write", j.write_err);
        leave_a_note(j.write_err, j.done);
        return -1;
    }
    return 0;
}

static int reserve_frame(size_t need)
{
    if (need <= frame_cap)
        return 0;
    size_t cap = frame_cap ? frame_cap : 256 * 1024;
    while (cap < need)
        cap *= 2;
    void *p = frame ? mremap(frame, frame_cap, cap, MREMAP_MAYMOVE)
                    : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    frame = p;
    frame_cap = cap;
    return 0;
}

int log_write(const tf_chunk *c, void *cctx)
{
    if (failed)
        return -1;
    if (c->len == 0)
        return 0;
    size_t n = 0;
    if (reserve_frame(tf_chunk_bound(c)) < 0 ||
        !(n = compress(c, cctx))) {
        give_up("cannot compress for", ENOMEM);
        return -1;
    }
    note_cctx = cctx;
    int rc = created ? append(frame, n) : create(frame, n);
    if (rc < 0)
        return rc;
    frames_written++;
    if (segment)
        kept[nkept - 1].bytes += n;
    else
        first_bytes += n;
    return 0;
}

/* ------------------------------------------------------------ segments */

static uint64_t segment_limit(void)
{
    uint64_t limit = trace_config_get()->max_bytes / SEGMENTS_PER_BUDGET;
    return limit < 8192 ? 8192 : limit;
}

void log_configure(void)
{
    said_map();
    if (!trace_config_get()->max_bytes)
        return;
    /* Frames of at most a fraction of a segment: compressed they are
     * smaller still, so the budget is overshot by little. */
    uint64_t limit = segment_limit();
    rec_set_frame_bytes(limit / 2 < 16384 ? 16384 : (size_t)(limit / 2), limit * 2 < 65536 ? 65536 : (size_t)(limit * 2));
}

uint32_t log_rotation_due(void)
{
    if (!trace_config_get()->max_bytes || !created || failed || rotation_off)
        return 0;
    uint64_t current = segment ? kept[nkept - 1].bytes : first_bytes;
    return current >= segment_limit() ? segment + 1 : 0;
}

/* what: what failed, with the file it failed on; the log goes on in the
 * current segment, path (not the one that could not be made). */
static void stop_rotating(const char *what, const char *file, int err)
{
    rotation_off = 1;
    trace_warn_log("%s%s%s: %s; the log goes on in %s, past TRACE_MAX_BYTES", what, file ? " " : "",
                   file ? file : "", strerror(err), path);
}

void log_rotation_impossible(void)
{
    if (!rotation_off)
        stop_rotating("cannot restate the definitions for a new segment", NULL, ENOMEM);
}

/* Delete the file by that name if it is still the one we made. */
static void unlink_if_ours(const char *name, dev_t dev, ino_t ino)
{
    struct stat st;
    if (lstat(name, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
        unlink(name);
}

/* Delete segment kept[0] if it is still the file we wrote. */
static void delete_oldest(void)
{
    char name[sizeof path];
    if (tf_segment_path(name, sizeof name, log_name, kept[0].number) == 0)
        unlink_if_ours(name, kept[0].dev, kept[0].ino);
    memmove(kept, kept + 1, (nkept - 1) * sizeof *kept);
    nkept--;
}

int log_rotate(const tf_chunk *restated, void *cctx)
{
    if (failed || rotation_off || !created)
        return -1;
    char name[sizeof path];
    size_t n = 0;
    if (tf_segment_path(name, sizeof name, log_name, segment + 1) < 0) {
        stop_rotating("cannot name the next segment", NULL, ENAMETOOLONG);
        return -1;
    }
    if (reserve_frame(tf_chunk_bound(restated)) < 0 ||
        !(n = compress(restated, cctx))) {
        stop_rotating("cannot compress a segment's opening", NULL, ENOMEM);
        return -1;
    }
    file_job j = { .name = name, .create = 1, .data = frame, .n = n };
    pf_run(run_file_job, &j);
    if (j.open_err) {
        /* Made but not opened again (the number kept changing hands): not
         * left behind, or the next try would find its name taken. */
        if (j.made)
            unlink_if_ours(name, j.dev, j.ino);
        if (out_of_descriptors(j.open_err))
            return -1;   /* still due: the next flush tries again */
        /* The current segment stays path: its file is the one the next
         * write checks (naming the new one there lost the log, ESTALE). */
        stop_rotating("cannot create the next segment", name, j.open_err);
        return -1;
    }
    if (j.write_err) {
        snprintf(path, sizeof path, "%s", name);
        give_up("cannot write", j.write_err);
        return -1;
    }
    if (nkept == KEPT_MAX)
        delete_oldest();
    snprintf(path, sizeof path, "%s", name);
    file_dev = j.dev;
    file_ino = j.ino;
    segment++;
    kept[nkept++] = (kept_segment){ .number = segment, .dev = j.dev, .ino = j.ino, .bytes = n };
    /* The files together, with the new segment grown to its limit, within
     * the budget: the oldest segments after the first go, but never the one
     * just finished (the latest events, whatever the budget). */
    uint64_t budget = trace_config_get()->max_bytes, total = first_bytes + segment_limit();
    for (unsigned i = 0; i + 1 < nkept; i++)
        total += kept[i].bytes;
    while (nkept > 2 && total > budget) {
        total -= kept[0].bytes;
        delete_oldest();
    }
    return 0;
}

off_t log_size(void)
{
    struct stat st;
    return created && stat(path, &st) == 0 ? st.st_size : -1;
}

void log_truncate(off_t size)
{
    if (!created || failed || size < 0)
        return;
    /* By path, the file checked first: no descriptor at all (exec's
     * ending runs on the program's thread, in its table). */
    struct stat st;
    int err = lstat(path, &st) != 0 ? errno : st.st_dev != file_dev || st.st_ino != file_ino ? ESTALE : 0;
    if (err) {
        give_up("lost", err);
        return;
    }
    if (truncate(path, size) != 0)
        give_up("cannot truncate", errno);
    else if (st.st_size > size)
        *(segment ? &kept[nkept - 1].bytes : &first_bytes) -= (uint64_t)(st.st_size - size);
}

void log_fork_child(void)
{
    created = 0;
    failed = 0;
    path[0] = '\0';
    log_name[0] = '\0';
    nkept = 0;
    segment = 0;
    first_bytes = 0;
    rotation_off = 0;
    frames_written = 0;
}

int log_failed(void)
{
    return failed;
}
