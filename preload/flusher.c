/*
 * flusher.c - the background flusher.
 *
 * Sealing takes the recorder's lock for a pointer swap; compressing and
 * writing happen outside it, under the write token (owner tid, like the
 * recorder's lock), which keeps frames in seal order and lets a flush from a
 * signal handler tell "another thread is writing, wait" from "I was writing,
 * give up".  The thread sleeps on a futex with a timeout of TRACE_FLUSH_MS
 * (100 ms by default); a full chunk wakes it.
 */
#define ZSTD_STATIC_LINKING_ONLY   /* ZSTD_initStaticCCtx: stable since zstd 1.3 */
#include "flusher.h"
#include "config.h"
#include "fault_mask.h"
#include "endings.h"
#include "host_blocks.h"
#include "log_file.h"
#include "private_files.h"
#include "proc_stat.h"
#include "futex.h"
#include "recorder.h"
#include "recorder_core.h"
#include "warn.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>


/* A bounded flush waits at most this long for another thread's write. */
#define SIGNAL_WAIT_NS 1000000000L
/* How long a stop waits for another thread's start of the flusher. */
#define START_WAIT_NS 2000000000L

static pthread_t thread;
/* STARTING: pthread_create in progress, `thread` not yet valid.
 * STOPPING: one thread is joining it (only one may: a second join of the
 * same thread is undefined, and an exit on one thread while another forks
 * or dies of a signal stops it from both).
 * HELD: a fork is in progress; no thread may start until it is over.
 * PARKED: exit: the thread wrote the log's end and waits for the process
 * to end with it (flusher_stop_for_exit); none starts again. */
enum { NOT_STARTED, STARTING, RUNNING, NO_THREAD, HELD, STOPPING, PARKED };
static _Atomic int started;
/* This thread is the one between STARTING and RUNNING, or the one joining. */
static __thread __attribute__((tls_model("initial-exec"))) int starting_here;
static __thread __attribute__((tls_model("initial-exec"))) int stopping_here;
/* This thread is the flusher (which may end the process: flusher_main). */
static __thread __attribute__((tls_model("initial-exec"))) int on_flusher;
static _Atomic int stopping;
/* exit: after its last flush the thread says so (parked = 1) and waits for
 * the process's end instead of returning to be joined. */
static _Atomic int parking, parked;
static _Atomic int kick_word;  /* futex: 1 when there is work */
static _Atomic pid_t token_owner;
static tf_chunk chunk;         /* swapped with the writer's buffer on seal */
static tf_chunk end_chunk;     /* exec: the frame holding END, kept apart */
static tf_chunk restated;      /* a new segment's opening (TRACE_MAX_BYTES) */
static off_t exec_cut;         /* exec: the log's size before that frame */
static ZSTD_CCtx *cctx;        /* in memory of its own, mapped at start */
static void *cctx_space;
static size_t cctx_size;

void flusher_init(void)
{
    /* Everything a level-1 stream can need, mapped once: compressing never
     * calls malloc, so a flush from a signal handler that interrupted malloc
     * cannot deadlock on its lock.  Mapped at start, so that a process
     * that ends for want of memory still has it. */
    size_t size = ZSTD_estimateCStreamSize(LOG_COMPRESSION_LEVEL);
    void *space = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (space != MAP_FAILED) {
        cctx_space = space;
        cctx_size = size;
    }
}

/* The compressor, set up in its memory at the first write (with the token
 * held), not at start: ZSTD_initStaticCCtx asks CPUID, which a virtual
 * machine's hypervisor answers, about 24 us of the 440 us a traced /bin/true
 * added on the 2-core VM, and it writes the context's first pages, for a
 * process that may never write.  Neither call can fail for want of memory
 * there, nor take a lock: a flush in a signal handler may make it. */
static ZSTD_CCtx *compressor(void)
{
    if (!cctx && cctx_space)
        cctx = ZSTD_initStaticCCtx(cctx_space, cctx_size);
    return cctx;
}

static int token_take(int bounded)
{
    pid_t me = rec_tid();
    if (atomic_load(&token_owner) == me)
        return 0;
    struct timespec nap = { 0, 1000000 };
    for (long waited = 0;; waited += nap.tv_nsec) {
        pid_t expected = 0;
        if (atomic_compare_exchange_strong(&token_owner, &expected, me))
            return 1;
        if (bounded && waited >= SIGNAL_WAIT_NS)
            return 0;
        nanosleep(&nap, NULL);
    }
}

static void token_release(void)
{
    atomic_store(&token_owner, 0);
    ending_check_deferred();
}

int flusher_token_held_here(void)
{
    return atomic_load(&token_owner) == rec_tid();
}

/* A chunk the file could not take yet (the process was out of
 * descriptors) is written before anything sealed after it. */
static int chunk_waiting;

static int flush_under_guard(int bounded)
{
    if (!token_take(bounded))
        return -1;
    int rc = 0;
    if (chunk_waiting) {
        rc = log_write(&chunk, compressor());
        chunk_waiting = rc == -EAGAIN;
    }
    if (!chunk_waiting) {
        /* A segment full: the frame sealed now ends it, and the next one
         * opens with every definition written up to that same seal. */
        uint32_t next = rec_active() ? log_rotation_due() : 0;   /* not after END */
        size_t n = next ? rec_seal_restate(&chunk, next, &restated) : rec_seal(&chunk);
        if (n > 0) {
            rc = log_write(&chunk, compressor());
            chunk_waiting = rc == -EAGAIN;
        }
        if (next && restated.len && rc == 0 && !chunk_waiting)
            log_rotate(&restated, compressor());
        else if (next && !restated.len)
            log_rotation_impossible();
    }
    token_release();
    return rc;
}

/* host_guard: zstd's buffers are the tracer's, not the application's. */
int flush_now(int bounded)
{
    host_guard_enter();
    int rc = flush_under_guard(bounded);
    host_guard_leave();
    return rc;
}

/* Run op(arg); when it found no descriptor free (a program at its soft
 * RLIMIT_NOFILE: a server leaking sockets up to it, a table filled on
 * purpose), once more with the soft limit raised by up to 8 for that run
 * alone, where the hard limit allows.  Put back before the program runs
 * again: an exec must not carry it into the new image. */
static int with_room(int (*op)(int), int arg)
{
    int rc = op(arg);
    if (rc != -EAGAIN)
        return rc;
    struct rlimit old;
    if (getrlimit(RLIMIT_NOFILE, &old) == 0 && old.rlim_cur < old.rlim_max) {
        struct rlimit more = old;
        more.rlim_cur = old.rlim_max - old.rlim_cur > 8 ? old.rlim_cur + 8 : old.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &more) == 0) {
            rc = op(arg);
            setrlimit(RLIMIT_NOFILE, &old);
        }
    }
    return rc;
}

int flush_final(int bounded)
{
    /* A program that ran out of descriptors ends with them all taken:
     * without the room its log would end at the last frame written
     * before, without END. */
    int rc = with_room(flush_now, bounded);
    if (rc == -EAGAIN)
        trace_warn("no descriptor free at the end of the process: the log's last events were not "
                   "written (%s)", log_path());
    return rc;
}

/* exec's writes, under the token: the frame waiting for the file, then
 * END's frame after it.  Each can be run again where it stopped (with_room):
 * what was written is not written twice. */
static int write_waiting(int unused)
{
    (void)unused;
    if (!chunk_waiting)
        return 0;
    int rc = log_write(&chunk, compressor());
    chunk_waiting = rc == -EAGAIN;
    return rc;
}

static int write_end(int unused)
{
    int rc = write_waiting(unused);
    if (rc == 0 && end_chunk.len) {
        exec_cut = log_size();
        rc = log_write(&end_chunk, compressor());
    }
    return rc;
}

int flush_exec_begin(const char *how)
{
    if (!token_take(0))
        return 0;
    exec_cut = -1;
    /* An exec with every descriptor taken gets the room an ending gets
     * (flush_final): before, the log of a successful one ended without END,
     * or was never created, and nothing said so. */
    int rc = with_room(write_waiting, 0);
    /* A frame the file could not take yet is the only copy of its events,
     * and sealing swaps the writer's buffer with the one it is in: while it
     * still waits nothing is sealed, nor END written after it (an exec
     * that fails goes on with both kept, for a later flush; one that
     * succeeds leaves the log where the file stopped taking it).  Before,
     * the seal went into that buffer and the log read as whole with the
     * frame's events missing (the gap in seq no reader flagged). */
    rec_exec_begin(how, chunk_waiting ? NULL : &chunk, &end_chunk);
    if (!chunk_waiting) {
        /* The frame sealed now waits too until written: where it cannot
         * be, a failed exec gives the flusher its next chance at it. */
        chunk_waiting = chunk.len > 0;
        rc = with_room(write_end, 0);
    }
    if (rc == -EAGAIN)
        trace_warn("no descriptor free at exec: the log's last events are not written unless the "
                   "exec fails (%s)", log_path());
    return 1;
}

void flush_exec_failed(void)
{
    if (exec_cut >= 0)
        log_truncate(exec_cut);
    rec_exec_failed();
    token_release();
}

/* /proc/self/stat, read through a descriptor of our own (pf_run: the
 * helper's table where it runs), read with pread so that a number the
 * program took meanwhile does not lose its offset. */
typedef struct stat_read { char buf[1024]; ssize_t n; } stat_read;

static int read_stat(void *arg)
{
    stat_read *r = arg;
    pf_file f = { .fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC) };
    struct stat st;
    r->n = -1;
    if (f.fd < 0)
        return -1;
    if (fstat(f.fd, &st) == 0) {
        f.dev = st.st_dev;
        f.ino = st.st_ino;
        r->n = pread(f.fd, r->buf, sizeof r->buf - 1, 0);
        pf_close(&f);
    }
    return 0;
}

/* Is this thread the process's last?  /proc/self/stat: its state (field 3,
 * the main thread's) and its count of threads (field 20), less the helper
 * (private_files.h) where it runs.  A main thread that ended while others
 * live stays a zombie, and counted, until the last ends: this one is the
 * last when it is the only thread, or one of two with the main thread a
 * zombie. */
static int last_thread_left(void)
{
    stat_read r;
    pf_run(read_stat, &r);
    if (r.n <= 0)
        return 0;
    r.buf[r.n] = '\0';
    const char *state = proc_stat_field(r.buf, 3), *count = proc_stat_field(r.buf, 20);
    long threads = count ? strtol(count, NULL, 10) - pf_helper_running() : 0;
    char st = state ? *state : '?';
    return threads == 1 || (threads == 2 && st == 'Z');
}

/* How often an idle flusher looks whether it is the last thread. */
#define ALONE_CHECK_NS 100000000L

static void *flusher_main(void *arg)
{
    (void)arg;
    on_flusher = 1;
    host_guard_enter();         /* for the thread's life: everything here is ours */
    /* Named here: naming it from the starting thread opens
     * /proc/self/task/TID/comm in the program's table; its own name is a
     * prctl. */
    prctl(PR_SET_NAME, "trace-flush");
    pf_start();
    /* TRACE_FLUSH_MS: how far behind the program a follower of the log
     * can be (check --follow); 100 ms by default. */
    long interval_ns = (long)trace_config_get()->flush_ms * 1000000L;
    long wait_ns = interval_ns < ALONE_CHECK_NS ? interval_ns : ALONE_CHECK_NS;
    long since_flush = 0;
    uint64_t seen = 0;
    unsigned idle = 0;
    while (!atomic_load(&stopping)) {
        futex_wait(&kick_word, 0, wait_ns);
        since_flush += wait_ns;
        if (atomic_exchange(&kick_word, 0) || since_flush >= interval_ns) {
            flush_now(0);
            since_flush = 0;
        }
        /* The program's last thread ended by pthread_exit (main() may end
         * so) while this one lives: glibc calls exit(0) when the last of
         * its threads ends, and this one counts, so nobody would, and the
         * process would stay forever with this thread, which blocks every
         * signal, SIGTERM included.  We call exit(0) for it.  Looked at only
         * while no event comes: the first second of idleness, then once a
         * second. */
        uint64_t events = rec_event_count();
        if (events != seen) {
            seen = events;
            idle = 0;
        } else if ((++idle <= 10 || idle % 10 == 0) && last_thread_left()) {
            flush_now(0);
            exit(0);
        }
    }
    /* A stop (exit, fork): what is pending goes now, from here, through
     * the helper's table.  At exit that is END: a program ending with every
     * descriptor of its own taken still gets it written (the helper's
     * table has free numbers), whatever point of the loop the stop found
     * this thread at. */
    flush_now(0);
    if (atomic_load(&parking)) {
        /* exit: the log is whole; the process ends with this thread and
         * its helper in it (exit_group ends them as it ends the program's
         * own), so neither is stopped nor joined.  That round trip (the
         * helper woken to quit, both threads' exits, glibc giving back
         * their stacks' pages) was the exiting thread's to wait for. */
        atomic_store(&parked, 1);
        futex_wake(&parked);
        for (;;)
            futex_wait(&parking, 1, 0);
    }
    pf_stop();
    return NULL;
}

/* Our two threads' stacks: sized for what runs on them, not the default
 * (RLIMIT_STACK, 8 MiB as a rule), whose address space a program under
 * `ulimit -v` that runs bare may not have to spare.  The flusher's is the
 * larger: it compresses (zstd's stack use is a few KiB), and when it is the
 * last thread it calls exit(), which runs the program's atexit handlers and
 * destructors on it.  glibc caches the stacks of joined threads by size, so
 * the flusher started again after a fork reuses its stack as before.  glibc
 * carves the static TLS of every initially loaded object out of the stack:
 * a program whose static TLS does not fit (pthread_create says EINVAL) gets
 * the default stacks, as before. */
#define FLUSHER_STACK (1024 * 1024)
#define HELPER_STACK (256 * 1024)

static int own_thread_attr(pthread_attr_t *attr, size_t stack)
{
    if (pthread_attr_init(attr) != 0)
        return 0;
    if (pthread_attr_setstacksize(attr, stack) != 0) {
        pthread_attr_destroy(attr);
        return 0;
    }
    return 1;
}

static __attribute__((noinline)) void start_thread(void)
{
    int expected = NOT_STARTED;
    starting_here = 1;
    if (!atomic_compare_exchange_strong(&started, &expected, STARTING)) {
        starting_here = 0;
        return;
    }
    /* The app's signals are the app's business: block them all in our
     * thread so no handler of the app ever runs on it. */
    sigset_t all, old;
    sigfillset(&all);
    own_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    int have_attr = own_thread_attr(&attr, FLUSHER_STACK);
    pthread_attr_t helper_attr;
    int have_helper_attr = own_thread_attr(&helper_attr, HELPER_STACK);
    pf_launch(have_helper_attr ? &helper_attr : NULL);
    int rc = pthread_create(&thread, have_attr ? &attr : NULL, flusher_main, NULL);
    if (rc != 0 && have_attr)
        rc = pthread_create(&thread, NULL, flusher_main, NULL);
    if (rc != 0)
        pf_cancel();
    if (have_attr)
        pthread_attr_destroy(&attr);
    if (have_helper_attr)
        pthread_attr_destroy(&helper_attr);
    own_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        /* Still correct, only later: exit and fatal signals flush. */
        atomic_store(&started, NO_THREAD);
        starting_here = 0;
        trace_warn_log("cannot start the flusher thread; the log is written at exit");
        return;
    }
    atomic_store(&started, RUNNING);
    starting_here = 0;
}

/* Asked at every event: the check alone, so that it stays small enough for
 * the compiler to inline into the recorder. */
void flusher_ensure_started(void)
{
    if (atomic_load_explicit(&started, memory_order_relaxed) == NOT_STARTED)
        start_thread();
}

int flusher_is_started(void)
{
    return atomic_load_explicit(&started, memory_order_relaxed) != NOT_STARTED;
}

int flusher_kicked(void)
{
    return atomic_load_explicit(&kick_word, memory_order_relaxed) != 0;
}

void flusher_kick(void)
{
    /* Called for every event while a sealed frame's worth waits, which when
     * every Python allocation is recorded is a third of them: a plain read
     * first, for a kick already given costs no locked instruction. */
    if (atomic_load_explicit(&kick_word, memory_order_relaxed))
        return;
    int expected = 0;
    if (atomic_compare_exchange_strong(&kick_word, &expected, 1))
        futex_wake(&kick_word);
}

static void stop(int for_exit)
{
    if (on_flusher) {
        /* exit() on the flusher, the program's last thread (flusher_main):
         * it cannot join itself; it stops with the process. */
        atomic_store(&stopping, 1);
        return;
    }
    /* A start on another thread ends as soon as the machine lets that
     * thread run, which under load can be many milliseconds (a count of
     * sched_yield calls was too short: the thread then started across a
     * fork); bounded only for a thread that never runs again (a debugger).
     * A start on this very thread, interrupted by a signal handler that
     * exits or forks, cannot end: no wait. */
    const struct timespec nap = { 0, 50000 };
    for (long waited = 0; !starting_here && atomic_load(&started) == STARTING &&
                          waited < START_WAIT_NS; waited += nap.tv_nsec)
        nanosleep(&nap, NULL);
    int expected = RUNNING;
    if (!atomic_compare_exchange_strong(&started, &expected, STOPPING)) {
        /* Another thread is joining it: wait for that (its flush is ours
         * too), unless that thread is this one, interrupted by a signal
         * handler that ends the process. */
        for (long waited = 0; !stopping_here && atomic_load(&started) == STOPPING &&
                              waited < START_WAIT_NS; waited += nap.tv_nsec)
            nanosleep(&nap, NULL);
        return;
    }
    stopping_here = 1;
    if (for_exit)
        atomic_store(&parking, 1);
    atomic_store(&stopping, 1);
    atomic_store(&kick_word, 1);
    futex_wake(&kick_word);
    if (for_exit) {
        while (!atomic_load(&parked))
            futex_wait(&parked, 0, 0);
        atomic_store(&started, PARKED);
        stopping_here = 0;
        return;
    }
    pthread_join(thread, NULL);
    /* Ready for a new thread: the next event starts one (after fork). */
    atomic_store(&stopping, 0);
    atomic_store(&started, NOT_STARTED);
    stopping_here = 0;
}

void flusher_stop(void)
{
    stop(0);
}

void flusher_stop_for_exit(void)
{
    stop(1);
}

/* Why the hold: a thread started by another thread's event between
 * fork_prepare and the fork would be one more thread across the fork (the
 * one CPython 3.12+ warns about), and its creation holds locks of the
 * thread library's own (GCC's libasan keeps a thread registry lock it does
 * not reset in the child) that the child's first pthread_create then waits
 * for for ever.  Bounded like flusher_stop: a starter interrupted on this
 * very thread leaves STARTING, and the hold is then not taken. */
void flusher_hold(void)
{
    for (int tries = 0; tries < 100; tries++) {
        flusher_stop();
        int expected = NOT_STARTED;
        if (atomic_compare_exchange_strong(&started, &expected, HELD) ||
            expected == HELD || expected == NO_THREAD || expected == PARKED || starting_here ||
            stopping_here)
            return;
        /* Another thread began a start between the stop and here (STARTING
         * or already RUNNING): stop that one too. */
    }
}

void flusher_release(void)
{
    int expected = HELD;
    atomic_compare_exchange_strong(&started, &expected, NOT_STARTED);
}

void flusher_fork_child(void)
{
    pf_fork_child();
    chunk_waiting = 0;   /* the parent's data, for the parent's log */
    atomic_store(&started, NOT_STARTED);
    atomic_store(&stopping, 0);
    atomic_store(&parking, 0);
    atomic_store(&parked, 0);
    stopping_here = 0;
    atomic_store(&kick_word, 0);
    atomic_store(&token_owner, 0);
}
