/*
 * recorder.c - one total order for every event from every thread.
 *
 * One spinlock guards the writer.  Under it an event gets its seq and is
 * encoded, so file order is seq order.  Everything slow happens outside it:
 * stacks are captured before taking it, compression and writing happen in the
 * flusher (flusher.c).  The lock word holds the owner's thread id, so a signal
 * handler that interrupts its own thread inside the recorder sees that and
 * drops its event instead of deadlocking.  fork() takes the lock in the
 * prepare handler, so no child inherits it held.
 */
#include "recorder.h"
#include "recorder_core.h"
#include "config.h"
#include "endings.h"
#include "event_clock.h"
#include "flusher.h"
#include "host_blocks.h"
#include "hook_stack.h"
#include "native_stack.h"
#include "dl_hooks.h"
#include "modules.h"
#include "thread_mem.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The innermost in TLS, the others in the thread's mapping. */
#define MAX_OPEN_OPS (1 + THREAD_MEM_OPEN_OPS)
#define MAX_PY_FRAMES 128

/* Thread-local state.  initial-exec: the library is preloaded, and the
 * default model may call __tls_get_addr, which can allocate on first use
 * (not something to do inside a signal handler).  One structure, not a
 * variable each: in a shared object every initial-exec variable's offset
 * is a GOT load at each place it is used, and fields share their
 * structure's (record_py_free loaded 7 offsets, record_py_alloc 6). */
#define TLS static __thread __attribute__((tls_model("initial-exec")))
typedef struct rec_thread {
    pid_t tid;
    /* The writer generation this thread's last THREAD record went to, and
     * the renames it had seen; the names it gave are in the thread's
     * mapping (thread_mem.h: os_name, py_name), where, when that could not
     * be mapped, the names are written anew at each event that reads them. */
    uint32_t named_generation;
    uint32_t names_epoch;
    uint32_t py_version;
    uint64_t name_ask_after;   /* the namer's: no need to ask before this */
    /* The operations open on this thread: the innermost, which every event
     * names as its parent, and under it the others, in the thread's mapping
     * (thread_mem.h: open_ops).  One that finds no room there (more than
     * MAX_OPEN_OPS open, or no mapping) is not opened. */
    uint32_t open_count;
    int in_event;              /* set: a signal handler interrupted rec_event */
    uint64_t open_top;
    /* The address of this thread's errno (fixed for the thread's life, and
     * a fork's child has it at the same place): `errno` is a call into libc
     * through the PLT, twice per event, 28 instructions an event in all,
     * 1.3 % of churn_cycles' under TRACE_PY_ALLOCS=1.  Set no later than
     * tid (rec_tid) and never cleared: a thread with its id has it, so
     * py_alloc_fast tests the id alone. */
    int *errno_at;
} rec_thread;
TLS rec_thread thr;

static tf_writer *writer;
static _Atomic int recording;
static _Atomic pid_t lock_owner;
static uint64_t last_seq;                 /* written under the lock, read anywhere */
static _Atomic uint64_t dropped;
static _Atomic uint32_t generation = 1;   /* a new writer after fork is a new generation */
static int fork_took_lock;
static const rec_py_provider *_Atomic py_provider;
static _Atomic rec_thread_namer thread_namer;
static _Atomic uint32_t names_epoch = 1;   /* bumped by every OS-level rename */
static size_t seal_bytes = REC_SEAL_BYTES, flush_now_bytes = REC_FLUSH_NOW_BYTES;
/* The lesser of the two: after_event's one compare for most events. */
static size_t act_bytes = REC_SEAL_BYTES < REC_FLUSH_NOW_BYTES ? REC_SEAL_BYTES : REC_FLUSH_NOW_BYTES;

void rec_set_frame_bytes(size_t seal, size_t flush_now)
{
    seal_bytes = seal < REC_SEAL_BYTES ? seal : REC_SEAL_BYTES;
    flush_now_bytes = flush_now < REC_FLUSH_NOW_BYTES ? flush_now : REC_FLUSH_NOW_BYTES;
    act_bytes = seal_bytes < flush_now_bytes ? seal_bytes : flush_now_bytes;
}

pid_t rec_tid(void)
{
    if (!thr.tid) {
        if (!thr.errno_at)
            thr.errno_at = &errno;   /* first: see errno_at */
        thr.tid = (pid_t)syscall(SYS_gettid);
    }
    return thr.tid;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* Returns 0 when this thread already holds the lock (re-entered from a
 * signal handler): the caller must drop what it was about to write.  The
 * owner is looked at only when the exchange failed, which hands it over:
 * a look before it cost every event a load, a compare and a branch (3 of
 * about 890 instructions a py_alloc or py_free adds, churn_cycles), and an
 * event has looked already (entering).  Nothing but this thread can make
 * the owner this thread, and a handler that takes the lock on it lets go
 * before it returns, so the answer is the same as looking first. */
static int lock_take(pid_t tid)
{
    for (unsigned spins = 0;; spins++) {
        pid_t expected = 0;
        if (atomic_compare_exchange_weak_explicit(&lock_owner, &expected, tid,
                                                  memory_order_acquire, memory_order_relaxed))
            return 1;
        if (expected == tid)
            return 0;
        if (spins > 64)
            sched_yield();
        else
            cpu_relax();
    }
}

static void lock_release(void)
{
    atomic_store_explicit(&lock_owner, 0, memory_order_release);
    ending_check_deferred();
}

int rec_lock_held_here(void)
{
    return atomic_load_explicit(&lock_owner, memory_order_relaxed) == rec_tid();
}

int rec_active(void)
{
    return atomic_load_explicit(&recording, memory_order_relaxed);
}

/* Events' times are CLOCK_MONOTONIC rounded down to the log's time unit
 * (TRACE_TIME_UNIT_NS, default 1 us).  Why coarse: the nanoseconds below a
 * microsecond are noise to whoever reads a log (two hooks' own costs), yet
 * they are what compresses worst, a quarter of a log's bytes on a pool's
 * stream; nothing orders by time (seq does).  The header's start is rounded
 * the same way, so no event precedes it.  Read under the lock, times are
 * non-decreasing in seq order (event_clock.c reads them for less than the
 * kernel's clock costs).  The default unit divides by a constant (a
 * multiply), any other by a 32-bit division when it divides a second, else
 * a 64-bit one. */
static uint64_t in_unit(uint64_t t)
{
    uint32_t unit = trace_config_get()->time_unit_ns;
    if (__builtin_expect(unit == 1000, 1))   /* in line: a jump less */
        return t - t % 1000;
    if (unit <= 1)
        return t;
    if (1000000000u % unit == 0)
        return t - (uint32_t)(t % 1000000000u) % unit;
    return t - t % unit;
}

/* The header's start: the kernel's clock, and no event's time below it. */
uint64_t rec_clock_ns(void)
{
    return in_unit(event_clock_start_ns());
}

int rec_start(const tf_header *h)
{
    writer = tf_writer_new(h);
    if (!writer)
        return -1;
    atomic_store(&recording, 1);
    return 0;
}

const rec_py_provider *rec_set_py_provider(const rec_py_provider *p)
{
    return atomic_exchange(&py_provider, p);
}

static _Atomic rec_open_check open_check;

rec_open_check rec_set_open_check(rec_open_check check)
{
    return atomic_exchange(&open_check, check);
}

/* Before an event that would nest in an open operation: the operation is
 * checked first (rec_set_open_check). */
static inline void check_open_ops(void)
{
    if (__builtin_expect(thr.open_count != 0, 0)) {
        void (*check)(void) = atomic_load_explicit(&open_check, memory_order_relaxed);
        if (check)
            check();
    }
}

rec_thread_namer rec_set_thread_namer(rec_thread_namer fn)
{
    return atomic_exchange(&thread_namer, fn);
}

void rec_threads_renamed(void)
{
    atomic_fetch_add(&names_epoch, 1);
}

/* The thread's names as a thread knows them before taking the lock: apart
 * from the stacks, so a py_free (which takes no stack) holds these 100
 * bytes on the program's stack, not the 4.3 KiB of a whole capture. */
struct captured_names {
    uint32_t generation;   /* of the writer, when captured */
    int name_due;          /* a THREAD record goes first: new writer, or a rename */
    uint32_t names_epoch;
    uint32_t py_version;   /* of the Python name, as the namer counts */
    char os_name[17];
    char py_name[REC_THREAD_NAME_MAX];
};

/* What a thread knows before taking the lock. */
struct captured {
    uint64_t ticks;        /* the event's time, as the counter read it (event_clock_early) */
    native_capture native; /* id: from the thread's memo, 0 if not there */
    uint32_t generation;   /* of the writer the memo's id belongs to */
    rec_py_raw py[MAX_PY_FRAMES];
    int npy;
    const rec_py_provider *provider;
    struct captured_names names;
};

/* The thread's names, when this writer has no THREAD record for them yet
 * (a new thread, a new writer after fork, a rename).  OS names are read
 * again only after a rename anywhere (prctl and pthread_setname_np are
 * interposed: thread_names.c); the Python name when the Python side says
 * its version changed (it looks now and then, with the GIL).  The names are
 * copied only when a record is due: most events pay two compares. */
static __attribute__((noinline)) void capture_names_due(struct captured_names *c, uint32_t epoch,
                                                       rec_thread_namer namer)
{
    int due = thr.named_generation != c->generation;
    char now[17];
    int os_read = 0;
    thread_mem *m = NULL;
    if (due || thr.names_epoch != epoch) {
        if (prctl(PR_GET_NAME, now) != 0)
            strcpy(now, "?");
        now[16] = '\0';
        os_read = 1;
        m = thread_mem_get();
        due |= !m || strncmp(now, m->os_name, sizeof m->os_name) != 0;
        /* Unchanged since our last THREAD record: no need to look again
         * until the next rename anywhere (else every event paid a
         * syscall after the flusher named its thread). */
        if (!due)
            thr.names_epoch = epoch;
    }
    c->names_epoch = epoch;
    char py[REC_THREAD_NAME_MAX];
    c->py_version = thr.py_version;
    if (namer && (due || event_clock_latest_ns() >= thr.name_ask_after))
        c->py_version = namer(thr.py_version, py, sizeof py, &thr.name_ask_after);
    int py_renamed = c->py_version != thr.py_version;
    due |= py_renamed;
    if (due) {
        if (!m)
            m = thread_mem_get();
        if (!os_read && !m) {
            if (prctl(PR_GET_NAME, now) != 0)
                strcpy(now, "?");
            now[16] = '\0';
            os_read = 1;
        }
        memcpy(c->os_name, os_read ? now : m->os_name, sizeof m->os_name);
        c->os_name[16] = '\0';
        c->py_name[0] = '\0';
        if (py_renamed)
            memcpy(c->py_name, py, sizeof py);
        else if (m)
            memcpy(c->py_name, m->py_name, sizeof m->py_name);
        else if (namer)   /* the name is not kept: the namer's, asked for in full */
            c->py_version = namer(0, c->py_name, sizeof c->py_name, &thr.name_ask_after);
        c->py_name[sizeof c->py_name - 1] = '\0';
    }
    c->name_due = due;
}

/* Most events: named in this writer, no rename anywhere since, and not
 * the time to ask the namer: three compares, and nothing stored but
 * name_due (the rest of c is read only when a record is due). */
static inline __attribute__((always_inline)) void capture_names(struct captured_names *c, int nested)
{
    c->name_due = 0;
    if (nested)
        return;   /* in a signal handler inside the recorder: next time */
    uint32_t epoch = atomic_load_explicit(&names_epoch, memory_order_relaxed);
    rec_thread_namer namer = atomic_load_explicit(&thread_namer, memory_order_acquire);
    if (__builtin_expect(thr.named_generation == c->generation && thr.names_epoch == epoch &&
                         (!namer || event_clock_latest_ns() < thr.name_ask_after), 1))
        return;
    capture_names_due(c, epoch, namer);
}

static inline __attribute__((always_inline)) void capture(struct captured *c, unsigned flags, int nested)
{
    /* First: the counter's read then overlaps with the stack capture
     * (event_clock.h).  Under TRACE_PY_ALLOCS=1 it had been the one
     * instruction the recorder stalled on most under its lock: half of
     * record_event's samples (perf, churn_cycles). */
    c->ticks = event_clock_early();
    c->generation = atomic_load_explicit(&generation, memory_order_relaxed);
    /* A signal handler that interrupted rec_event could find the memo half
     * updated: it goes without. */
    c->native.n = c->native.id = 0;
    if (flags & REC_NATIVE_STACK)
        native_stack_capture(&c->native, trace_config_get()->stack_depth, c->generation, nested);
    c->provider = atomic_load_explicit(&py_provider, memory_order_acquire);
    c->npy = 0;
    if (flags & REC_PY_STACK && c->provider)
        c->npy = (flags & REC_PY_CHECKED ? c->provider->capture_checked
                                         : c->provider->capture)(c->py, MAX_PY_FRAMES);
    c->names.generation = c->generation;
    capture_names(&c->names, nested);
}

/* The names alone, kept out of line: rec_py_free needs them only when a
 * THREAD record may be due. */
static __attribute__((noinline)) void capture_names_only(struct captured_names *c, int nested)
{
    c->generation = atomic_load_explicit(&generation, memory_order_relaxed);
    capture_names(c, nested);
}

/* Under the lock: the thread's THREAD record, when one is due.  A new
 * segment's opening restates no THREAD record (writer.c), and the
 * generation it bumped may have come between capture_names and the lock
 * (or the event captured no names: END, a handler's event): a thread named
 * in an earlier generation is named again from what it last wrote, so
 * every event of a segment has its thread's names before it there. */
static __attribute__((noinline)) void encode_names_due(const struct captured_names *c, pid_t tid, uint32_t now)
{
    thread_mem *m = thread_mem_peek();
    if (!c->name_due) {
        /* Without the mapping (it failed: capture_names made the thread's
         * events due until then), as a thread never named. */
        tf_write_thread_names(writer, (uint32_t)tid, m ? m->os_name : "", m ? m->py_name : "");
        thr.named_generation = now;
        return;
    }
    tf_write_thread_names(writer, (uint32_t)tid, c->os_name, c->py_name);
    thr.named_generation = now;
    if (!m)
        return;   /* due again at the next event that looks */
    thr.names_epoch = c->names_epoch;
    memcpy(m->os_name, c->os_name, sizeof m->os_name);
    m->os_name[sizeof m->os_name - 1] = '\0';
    memcpy(m->py_name, c->py_name, sizeof m->py_name);
    thr.py_version = c->py_version;
}

/* Every event comes here: the check inline, the writing out of line.
 * due: c->name_due, which a caller may know without reading it. */
static inline void encode_names_if(const struct captured_names *c, int due, pid_t tid)
{
    uint32_t now = atomic_load_explicit(&generation, memory_order_relaxed);
    if (__builtin_expect(due || (thr.named_generation && thr.named_generation != now), 0))
        encode_names_due(c, tid, now);
}

static inline void encode_names(const struct captured_names *c, pid_t tid)
{
    encode_names_if(c, c->name_due, tid);
}

/* Under the lock: the event's place in the order, its thread and parent. */
static inline void stamp(tf_event *e, pid_t tid)
{
    e->seq = last_seq + 1;
    __atomic_store_n(&last_seq, e->seq, __ATOMIC_RELAXED);
    e->tid = (uint32_t)tid;
    e->parent = thr.open_top;
}

/* Under the lock: definitions this event refers to, then the event.
 * Inlined into record_as (it runs after hook_stack_roomy, so its frame
 * is no deeper than before): the call and its own frame cost every event
 * about 10 instructions (callgrind, churn_cycles and threaded with
 * TRACE_PY_ALLOCS=1).  Not record_event into rec_event: its 4.5 KiB frame
 * would then be taken before the stack's room is asked about.
 * flags, text and kind are record_as's: constants there for a py_alloc,
 * so that what cannot apply to it goes (c is read again after each call
 * out, the stack capture's pointer into it having escaped).  The
 * definitions come before the event's seq and time, which are only needed
 * after them: taken before, they were kept across the calls that write
 * the definitions, spilled and reloaded (4 instructions a py_alloc).  Both
 * are still taken under the lock. */
static inline __attribute__((always_inline)) uint64_t encode(tf_event *e, const struct captured *c, pid_t tid,
                                                             unsigned flags, uint32_t *text_id,
                                                             const char *text, uint32_t kind)
{
    encode_names(&c->names, tid);
    e->native_stack = flags & REC_NATIVE_STACK ? c->native.id : 0;
    if (flags & REC_NATIVE_STACK && c->native.n &&
        (!c->native.id || c->generation != atomic_load(&generation)))
        e->native_stack = tf_write_native_stack(writer, c->native.ips, (uint32_t)c->native.n);
    e->py_stack = flags & REC_PY_STACK && c->npy > 0 ? c->provider->intern(writer, c->py, c->npy) : 0;
    if (text)
        *text_id = tf_write_string(writer, text, strlen(text));
    stamp(e, tid);
    e->t_ns = in_unit(event_clock_ns_from(c->ticks));   /* under the lock: event_clock.h */
    if (kind == TF_EV_PY_ALLOC)
        tf_write_py_allocs(writer, e);
    else
        tf_write_event(writer, e);
    return e->seq;
}

/* The calling thread's id when it may record now, else 0: not recording,
 * or a signal handler interrupting this thread inside the recorder, whose
 * event is dropped, and dropped before the costly stack capture, so a
 * storm of such signals cannot keep the interrupted thread (and every
 * thread waiting for the lock) from making progress. */
static inline pid_t entering(void)
{
    if (!rec_active())
        return 0;
    pid_t tid = rec_tid();
    if (atomic_load_explicit(&lock_owner, memory_order_relaxed) == tid) {
        atomic_fetch_add(&dropped, 1);
        return 0;
    }
    return tid;
}

/* The lock, or the event dropped (lock_take). */
static inline int take_or_drop(pid_t tid)
{
    if (lock_take(tid))
        return 1;
    thr.in_event--;
    atomic_fetch_add(&dropped, 1);
    return 0;
}

/* After the lock: the flusher started, and woken (or its work done here)
 * when the chunk has grown enough. */
static inline void after_event(size_t pending)
{
    flusher_ensure_started();
    /* Most events leave the chunk below both: one compare, not two (the
     * second then cost every py_alloc and py_free 2 instructions). */
    if (__builtin_expect(pending < act_bytes, 1))
        return;
    if (pending >= flush_now_bytes)
        flush_now(0);
    else if (pending >= seal_bytes && !flusher_kicked())
        flusher_kick();
}

/* Whether after_event has something to do: the chunk past a bound, less a
 * seal already asked for.  A chunk stays past the seal's bound from the
 * kick until the flusher takes it, a third of the events when every Python
 * allocation is recorded (more where the flusher thread waits for a core),
 * and each of them called flusher_kick, or went py_free_fast_after's way
 * (46 instructions: callgrind, churn_cycles 0.1 on 3.11). */
static inline int after_event_due(size_t pending)
{
    return __builtin_expect(pending >= act_bytes, 0) && (pending >= flush_now_bytes || !flusher_kicked());
}

/* Where an operation about to open keeps the one it opens inside: the
 * thread's mapping, looked up before the lock (it may map memory), or NULL
 * when none is needed (nothing open) or there is no room. */
static inline thread_mem *open_room(void)
{
    return thr.open_count && thr.open_count < MAX_OPEN_OPS ? thread_mem_get() : NULL;
}

/* seq opened on this thread, when there is room (see thr.open_top): under
 * the lock, right after its record.  Opened after the lock, a signal
 * handler that ran between the two recorded its events on this thread with
 * the operation around it as their parent, while the log already had the
 * operation begun: a reader takes the operation as left (raised) there,
 * and a cudaMalloc it made next as no segment of its pool's, and the block
 * the pool then handed out as outside every segment (torture.sigstorm,
 * trace-replay check's model-free checks).  m: open_room's, before the
 * lock; a handler that opened one since makes it stale: not opened. */
static inline void open_push(thread_mem *m, uint64_t seq)
{
    if (thr.open_count) {
        if (!m || thr.open_count >= MAX_OPEN_OPS)
            return;
        m->open_ops[thr.open_count - 1] = thr.open_top;
    }
    thr.open_top = seq;
    thr.open_count++;
}

/* kind: 0 for any event (e->kind), or TF_EV_PY_ALLOC for record_py_alloc,
 * whose flags and text are constants: what cannot apply to it (a native
 * stack, a text, an operation opened) folds away, and its record is encoded
 * from its kind's layout without looking the kind up. */
static inline __attribute__((always_inline)) uint64_t record_as(tf_event *e, unsigned flags, uint32_t *text_id,
                                                                const char *text, uint32_t kind)
{
    pid_t tid = entering();
    if (!tid)
        return 0;
    int nested = thr.in_event++;
    struct captured c;
    capture(&c, flags, nested);
    /* Inside dlopen (a constructor of the object being loaded: OpenBLAS
     * maps its buffers there, at every NumPy import), the stack may run
     * through objects the rescan after dlopen has not recorded yet, and a
     * reader resolves an address with the modules loaded at its event:
     * record them first. */
    if (flags & REC_NATIVE_STACK && !nested && c.native.n && dl_in_dlopen())
        modules_rescan_if_changed();
    thread_mem *open_at = flags & REC_OPEN ? open_room() : NULL;
    if (!take_or_drop(tid))
        return 0;
    uint64_t seq = 0;
    size_t pending = 0;
    if (rec_active()) {
        seq = encode(e, &c, tid, flags, text_id, text, kind);
        pending = tf_writer_pending(writer);
        if (seq && flags & REC_OPEN)
            open_push(open_at, seq);
    }
    lock_release();
    if (flags & REC_NATIVE_STACK && seq && !nested && c.native.n && !c.native.id)
        native_stack_remember(c.generation, e->native_stack);
    thr.in_event--;
    after_event(pending);
    return seq;
}

/* Out of line, both: their 4.5 KiB frames are taken only once
 * hook_stack_roomy said there is room. */
static __attribute__((noinline)) uint64_t record_event(tf_event *e, unsigned flags, uint32_t *text_id,
                                                       const char *text)
{
    return record_as(e, flags, text_id, text, 0);
}

/* A py_alloc with its Python stack alone (TRACE_PY_ALLOCS without
 * TRACE_PY_ALLOC_NATIVE).  The event is its own, never seen outside
 * (tf_write_py_allocs is inlined here): its fields stay in registers. */
static __attribute__((noinline)) uint64_t record_py_alloc(uint64_t ptr, uint64_t size, uint32_t api)
{
    tf_event e;   /* not zeroed: tf_write_py_allocs reads the common fields, which encode sets, and these */
    e.u.host.domain = TF_HOST_OBJ;
    e.u.host.ptr = ptr;
    e.u.host.size = size;
    e.u.host.api = api;
    return record_as(&e, REC_PY_STACK, NULL, NULL, TF_EV_PY_ALLOC);
}

/* A py_free: no stacks, no text, and most of them join the PY_FREES record
 * the chunk ends with (tf_write_py_free_joins), whose time they share, so
 * only the first of a run reads the clock.  The thread's names are looked
 * at only when its THREAD record may be due (a new writer, a rename seen
 * anywhere: the flusher names its thread when it starts), not the Python
 * name: that waits for the thread's next other event.  A collection of
 * churn_cycles frees 700 objects in a row; as any event a free cost about
 * 580 instructions, 190 so.  No tf_event is built for one that joins (its
 * fields are arguments, kept in registers). */
static const struct captured_names no_names;   /* name_due 0 */

/* The first free of a record: the clock read, a tf_event. */
static __attribute__((noinline)) void write_py_frees_first(uint64_t seq, pid_t tid, uint32_t domain,
                                                           uint64_t ptr)
{
    tf_event e;
    tf_event_init(&e, TF_EV_PY_FREE);
    e.seq = seq;
    e.tid = (uint32_t)tid;
    e.parent = thr.open_top;
    e.t_ns = in_unit(event_clock_ns());
    e.u.host.domain = domain;
    e.u.host.ptr = ptr;
    tf_write_py_frees(writer, &e);
}

static __attribute__((noinline, cold)) uint64_t py_free_aside(uint32_t domain, uint64_t ptr);

static inline int *program_errno(void);

/* The one copy of a py_free's work (aside: already on a roomy stack, from
 * py_free_aside), so the writer's join has one caller and LTO inlines it
 * (with a second copy here for the aside path, GCC called it: 70
 * instructions a free, not 50). */
static __attribute__((noinline)) uint64_t record_py_free(uint32_t domain, uint64_t ptr, int aside)
{
    if (__builtin_expect(!aside && !hook_stack_roomy(), 0))
        return py_free_aside(domain, ptr);
    int *err = program_errno(), saved_errno = *err;
    host_guard_enter();
    uint64_t seq = 0;
    pid_t tid = entering();
    if (tid) {
        int nested = thr.in_event++;
        /* due: names captured with a THREAD record due.  A flag, not a
         * pointer to no_names or names that encode_names reads name_due
         * through: that was a load and an lea each free. */
        int due = 0;
        struct captured_names names;
        if (__builtin_expect(thr.named_generation != atomic_load_explicit(&generation, memory_order_relaxed) ||
                             thr.names_epoch != atomic_load_explicit(&names_epoch, memory_order_relaxed), 0)) {
            capture_names_only(&names, nested);
            due = names.name_due;
        }
        if (take_or_drop(tid)) {
            size_t pending = 0;
            if (rec_active()) {
                encode_names_if(due ? &names : &no_names, due, tid);
                seq = last_seq + 1;
                __atomic_store_n(&last_seq, seq, __ATOMIC_RELAXED);
                if (!tf_write_py_free_joins_bare(writer, seq, (uint32_t)tid, thr.open_top, domain, ptr))
                    write_py_frees_first(seq, tid, domain, ptr);
                pending = tf_writer_pending(writer);
            }
            lock_release();
            thr.in_event--;
            after_event(pending);
        }
    }
    host_guard_leave();
    *err = saved_errno;
    return seq;
}

static inline int *program_errno(void)
{
    int *at = thr.errno_at;
    if (__builtin_expect(!at, 0))
        thr.errno_at = at = &errno;
    return at;
}

/* An event's work where the thread's stack has too little left for it
 * (hook_stack.h): packed, and run there. */
struct aside_args {
    tf_event *e;
    uint32_t domain;        /* a py_free's, with ptr */
    uint64_t ptr;
    unsigned flags;
    uint32_t *text_id;
    const char *text;
    uint64_t seq;
};

static void record_event_packed(void *arg)
{
    struct aside_args *a = arg;
    a->seq = record_event(a->e, a->flags, a->text_id, a->text);
}

static void record_py_alloc_packed(void *arg)
{
    struct aside_args *a = arg;
    a->seq = record_py_alloc(a->e->u.host.ptr, a->e->u.host.size, a->e->u.host.api);
}

static void record_py_free_packed(void *arg)
{
    struct aside_args *a = arg;
    a->seq = record_py_free(a->domain, a->ptr, 1);
}

/* The switch itself under the guard, errno kept, as for any event. */
static uint64_t py_free_aside(uint32_t domain, uint64_t ptr)
{
    int *err = program_errno(), saved_errno = *err;
    host_guard_enter();
    struct aside_args a = { .domain = domain, .ptr = ptr };
    hook_stack_run(record_py_free_packed, &a);
    host_guard_leave();
    *err = saved_errno;
    return a.seq;
}

static __attribute__((noinline, cold)) uint64_t
record_aside(void (*fn)(void *), tf_event *e, unsigned flags, uint32_t *text_id, const char *text)
{
    struct aside_args a = { .e = e, .flags = flags, .text_id = text_id, .text = text };
    hook_stack_run(fn, &a);
    return a.seq;
}

/* py_free_fast's ways out, reached by tail calls (it calls nothing). */

/* Under the lock, before anything is written or the seq taken: let go,
 * and the general way.  A deferred ending (ending_check_deferred) waits
 * for record_py_free's release, after its free is written, as it would
 * have waited for ours; or, where that takes no lock (not recording),
 * runs after it. */
static __attribute__((noinline, cold)) uint64_t py_free_fast_back(uint32_t domain, uint64_t ptr)
{
    atomic_store_explicit(&lock_owner, 0, memory_order_release);
    thr.in_event--;
    host_guard_leave();
    uint64_t seq = record_py_free(domain, ptr, 0);
    int *err = program_errno(), saved_errno = *err;
    ending_check_deferred();
    *err = saved_errno;
    return seq;
}

/* After the lock, where something is due: a deferred ending, the
 * flusher's start, a seal or a flush (after_event). */
static __attribute__((noinline)) uint64_t py_free_fast_after(uint64_t seq, size_t pending)
{
    int *err = program_errno(), saved_errno = *err;
    ending_check_deferred();
    thr.in_event--;
    after_event(pending);
    host_guard_leave();
    *err = saved_errno;
    return seq;
}

/* Nearly every py_free: recording, on a thread with its id, in no event,
 * with room on its stack and its names written in this writer with none
 * due, joining the PY_FREES record the chunk ends with (record_py_free's
 * test: the record's thread, parent and domain, room left).  A leaf: it
 * calls nothing, so it saves no registers and keeps no errno (nothing it
 * runs can change it); anything else, found before the free is written,
 * goes record_py_free's way, and what follows a write only now and then
 * (a deferred ending, the flusher's start, a seal or a flush) goes
 * py_free_fast_after's.  The same record, byte for byte. */
static __attribute__((noinline)) uint64_t py_free_fast(uint32_t domain, uint64_t ptr)
{
    pid_t tid = thr.tid;
    /* Not the owner's test (entering): a handler inside the recorder on
     * this thread finds the lock taken below, and the general way drops
     * its free. */
    if (__builtin_expect(!rec_active() || !tid || thr.in_event || !hook_stack_roomy() ||
                             thr.named_generation != atomic_load_explicit(&generation, memory_order_relaxed) ||
                             thr.names_epoch != atomic_load_explicit(&names_epoch, memory_order_relaxed),
                         0))
        return record_py_free(domain, ptr, 0);
    host_guard_enter();
    thr.in_event++;
    /* lock_take's first try; a wait (its call to sched_yield) is the
     * general way's. */
    pid_t unowned = 0;
    if (__builtin_expect(!atomic_compare_exchange_strong_explicit(&lock_owner, &unowned, tid, memory_order_acquire,
                                                                  memory_order_relaxed),
                         0)) {
        thr.in_event--;
        host_guard_leave();
        return record_py_free(domain, ptr, 0);
    }
    /* encode_names_if's test, for names captured with none due: the
     * generation moved since the test above. */
    uint32_t now = atomic_load_explicit(&generation, memory_order_relaxed);
    uint64_t seq = last_seq + 1;
    if (__builtin_expect(!rec_active() || thr.named_generation != now ||
                             !tf_write_py_free_joins_leaf(writer, seq, (uint32_t)tid, thr.open_top, domain, ptr),
                         0))
        return py_free_fast_back(domain, ptr);
    __atomic_store_n(&last_seq, seq, __ATOMIC_RELAXED);
    size_t pending = tf_writer_pending(writer);
    atomic_store_explicit(&lock_owner, 0, memory_order_release);   /* lock_release, less its check */
    if (__builtin_expect(atomic_load_explicit(&ending_deferred_sig, memory_order_relaxed) != 0 ||
                             !flusher_is_started() || after_event_due(pending),
                         0))
        return py_free_fast_after(seq, pending);
    thr.in_event--;
    host_guard_leave();
    return seq;
}

uint64_t rec_py_free(uint32_t domain, uint64_t ptr)
{
    return py_free_fast(domain, ptr);
}

/* host_guard: what the recorder, libunwind and the flusher allocate on the
 * way is the tracer's, not the application's (host_blocks.h).  errno is the
 * program's: an event is recorded inside its calls (a malloc that succeeded,
 * a realloc that failed with ENOMEM and whose block is recorded again after
 * it), and the stack walk (libunwind's validation pipe answers EAGAIN,
 * unwind_pipe.c), the flusher's start and its writes would otherwise leave
 * their own errno there. */
uint64_t rec_event(tf_event *e, unsigned flags)
{
    int *err = program_errno(), saved_errno = *err;
    check_open_ops();
    host_guard_enter();
    uint64_t seq = __builtin_expect(hook_stack_roomy(), 1)
                       ? record_event(e, flags, NULL, NULL)
                       : record_aside(record_event_packed, e, flags, NULL, NULL);
    host_guard_leave();
    *err = saved_errno;
    return seq;
}

/* An OBJ-domain py_alloc's event, for the ways that need one whole. */
static inline tf_event py_alloc_event(uint64_t ptr, uint64_t size, uint32_t api)
{
    tf_event e;
    tf_event_init(&e, TF_EV_PY_ALLOC);
    e.u.host.domain = TF_HOST_OBJ;
    e.u.host.ptr = ptr;
    e.u.host.size = size;
    e.u.host.api = api;
    return e;
}

static __attribute__((noinline, cold)) uint64_t record_py_alloc_aside(uint64_t ptr, uint64_t size, uint32_t api)
{
    tf_event e = py_alloc_event(ptr, size, api);
    return record_aside(record_py_alloc_packed, &e, REC_PY_STACK, NULL, NULL);
}

/* A py_alloc any way: the door's, less its usual case (py_alloc_fast). */
static __attribute__((noinline)) uint64_t py_alloc_general(uint64_t ptr, uint64_t size, uint32_t api)
{
    int *err = program_errno(), saved_errno = *err;
    check_open_ops();
    host_guard_enter();
    uint64_t seq = __builtin_expect(hook_stack_roomy(), 1) ? record_py_alloc(ptr, size, api)
                                                           : record_py_alloc_aside(ptr, size, api);
    host_guard_leave();
    *err = saved_errno;
    return seq;
}

_Static_assert(sizeof(rec_py_raw) * MAX_PY_FRAMES <= THREAD_MEM_PY_FRAMES_BYTES, "thread_mem.h: the frames' part");

/* Nearly every py_alloc under TRACE_PY_ALLOCS=1: recording, on a thread
 * that has its mapping, its errno's address and its id, in no event
 * (nothing nested: a signal handler inside the recorder goes the general
 * way), with no operation open, room on its stack, and its names written
 * in this writer with none due (capture_names' test).  What the general
 * way (py_alloc_general, record_py_alloc) does then, in one small frame:
 * the frames are captured into the thread's mapping, not into a 4.5 KiB
 * struct captured on the stack, so the door's work (errno, host_guard,
 * the stack's room) and the event's share a frame, and nothing of the
 * capture is stored but the frames.  The same record, byte for byte: the
 * same calls in the same order, the names' check under the lock as
 * encode_names_if makes it for an event that captured none due. */
static int take_or_drop_waiting(pid_t tid);

static inline __attribute__((always_inline)) uint64_t py_alloc_fast_as(uint64_t ptr, uint64_t size, uint32_t api)
{
    thread_mem *m = thread_mem_peek();
    pid_t tid = thr.tid;   /* and so errno_at (rec_tid) */
    /* Not the owner's test (entering): in no event, the thread holds the
     * lock only in a handler that interrupted a definition or a seal, which
     * finds it taken below and drops its event there as entering would
     * have, after a capture for nothing.  The namer is looked for only
     * when the time to ask it has come: with none, name_ask_after stays 0
     * and that is every event (a load, a test and a branch fewer an event
     * where there is one, the Python program's usual case). */
    if (__builtin_expect(!rec_active() || !m || !tid || thr.in_event || thr.open_count ||
                             !hook_stack_roomy() ||
                             thr.named_generation != atomic_load_explicit(&generation, memory_order_relaxed) ||
                             thr.names_epoch != atomic_load_explicit(&names_epoch, memory_order_relaxed) ||
                             (event_clock_latest_ns() >= thr.name_ask_after &&
                              atomic_load_explicit(&thread_namer, memory_order_acquire)),
                         0))
        return py_alloc_general(ptr, size, api);
    int *err = thr.errno_at;
    int saved_errno = *err;
    host_guard_enter();
    thr.in_event++;
    uint64_t ticks = event_clock_early();
    const rec_py_provider *provider = atomic_load_explicit(&py_provider, memory_order_acquire);
    int npy = __builtin_expect(provider != NULL, 1) ? provider->capture((rec_py_raw *)(void *)m->py_frames, MAX_PY_FRAMES)
                                                     : 0;
    /* Kept across the call: the arguments, saved_errno, ticks, provider
     * and npy.  What is the thread's is read again after it (a load each),
     * not kept (a store and a load each, and the registers it held made
     * GCC spill more in the writer's join below). */
    __asm__ volatile("" ::: "memory");
    uint64_t seq = 0;
    /* lock_take's first try in line (its loop, and its look at the owner
     * when that fails, take_or_drop's): the loop's state in line cost 2
     * instructions an event. */
    pid_t unowned = 0;
    if (__builtin_expect(!atomic_compare_exchange_strong_explicit(&lock_owner, &unowned, thr.tid,
                                                                  memory_order_acquire, memory_order_relaxed),
                         0) &&
        !take_or_drop_waiting(thr.tid))
        goto out;
    if (__builtin_expect(!rec_active(), 0)) {
        lock_release();
        thr.in_event--;
        after_event(0);
        goto out;
    }
    /* encode_names_if's test for names captured with none due, less its
     * test of named_generation against 0 (a thread never named): the test
     * above found it equal to generation, which is never 0, and nothing
     * sets it to 0 since (a handler's event sets it to a generation). */
    uint32_t now = atomic_load_explicit(&generation, memory_order_relaxed);
    if (__builtin_expect(thr.named_generation != now, 0))
        encode_names_due(&no_names, thr.tid, now);
    uint32_t py_stack = npy > 0 ? provider->intern(writer, (rec_py_raw *)(void *)thread_mem_peek()->py_frames, npy)
                                : 0;
    seq = last_seq + 1;
    __atomic_store_n(&last_seq, seq, __ATOMIC_RELAXED);
    uint64_t t_ns = in_unit(event_clock_ns_from(ticks));   /* under the lock: event_clock.h */
    /* The event whole only where it starts a record: its fields stay in
     * registers (stored for the join, they were 20 instructions an
     * allocation). */
    /* The join's result is the chunk's length (tf_writer_pending's, not
     * loaded again). */
    size_t pending = tf_write_py_allocs_join(writer, seq, (uint32_t)thr.tid, thr.open_top, t_ns, TF_HOST_OBJ,
                                             py_stack, ptr, size, api);
    if (!pending) {
        tf_event e = py_alloc_event(ptr, size, api);
        e.seq = seq;
        e.tid = (uint32_t)thr.tid;
        e.parent = thr.open_top;
        e.t_ns = t_ns;
        e.py_stack = py_stack;
        tf_write_py_allocs_rest(writer, &e);
        pending = tf_writer_pending(writer);
    }
    lock_release();
    thr.in_event--;
    after_event(pending);
out:
    host_guard_leave();
    *thr.errno_at = saved_errno;
    return seq;
}

/* take_or_drop, out of line: in line, GCC kept its loop's count from the
 * first try's result (2 instructions an event). */
static __attribute__((noinline, cold)) int take_or_drop_waiting(pid_t tid)
{
    return take_or_drop(tid);
}

/* For a new object (api 0): nearly every py_alloc.  A resized one
 * (TF_HOST_API_REALLOC) goes the general way: the constant frees the
 * register api held, which GCC saved around both calls (4 instructions an
 * event), and folds its test in the writer's join; and a second copy of
 * this for a resize made GCC call the join instead of inlining it (31
 * instructions an event more). */
static __attribute__((noinline)) uint64_t py_alloc_fast(uint64_t ptr, uint64_t size)
{
    return py_alloc_fast_as(ptr, size, 0);
}

uint64_t rec_py_alloc(uint64_t ptr, uint64_t size, uint32_t api, unsigned flags)
{
    if (__builtin_expect(flags != REC_PY_STACK, 0)) {
        tf_event e = py_alloc_event(ptr, size, api);
        return rec_event(&e, flags);
    }
    return __builtin_expect(api == 0, 1) ? py_alloc_fast(ptr, size) : py_alloc_general(ptr, size, api);
}

uint64_t rec_event_text(tf_event *e, unsigned flags, uint32_t *text_id, const char *text)
{
    int *err = program_errno(), saved_errno = *err;
    check_open_ops();
    host_guard_enter();
    uint64_t seq = __builtin_expect(hook_stack_roomy(), 1)
                       ? record_event(e, flags, text_id, text)
                       : record_aside(record_event_packed, e, flags, text_id, text);
    host_guard_leave();
    *err = saved_errno;
    return seq;
}

void rec_close(uint64_t seq)
{
    /* Normally the innermost; after a mismatch (an operation whose end was
     * never reported) close everything opened inside it too. */
    if (!thr.open_count)
        return;
    /* Those under the innermost are in the mapping (open_push); were it
     * gone (given back at the thread's exit), everything is closed. */
    const thread_mem *m = thread_mem_peek();
    if (thr.open_top == seq && (thr.open_count == 1 || m)) {
        thr.open_count--;
    } else if (m) {
        uint32_t i = thr.open_count - 1;
        while (i > 0 && m->open_ops[i - 1] != seq)
            i--;
        if (!i)
            return;
        thr.open_count = i - 1;
    } else {
        thr.open_count = 0;
    }
    thr.open_top = thr.open_count ? m->open_ops[thr.open_count - 1] : 0;
}

/* Definitions: run fn under the lock when recording. */
void rec_define(void (*fn)(tf_writer *w, void *arg), void *arg)
{
    if (!rec_active())
        return;
    int saved_errno = errno;   /* as rec_event: a not_watched INFO comes inside the program's calls */
    if (lock_take(rec_tid())) {
        if (rec_active())
            fn(writer, arg);
        lock_release();
    }
    errno = saved_errno;
}

void rec_native_stacks_stale(tf_writer *w)
{
    tf_writer_forget_native_stacks(w);
    /* The memos' ids (native_stack.c) are valid for one generation. */
    atomic_fetch_add(&generation, 1);
}

struct string_arg { const char *s; uint32_t id; };

static void define_string(tf_writer *w, void *arg)
{
    struct string_arg *a = arg;
    a->id = tf_write_string(w, a->s, strlen(a->s));
}

uint32_t rec_string(const char *s)
{
    struct string_arg a = { s, 0 };
    rec_define(define_string, &a);
    return a.id;
}

struct named_arg { uint32_t num; const char *key, *value; };

static void define_pool(tf_writer *w, void *arg)
{
    struct named_arg *a = arg;
    tf_write_pool(w, a->num, a->value);
}

void rec_pool(uint32_t pool, const char *name)
{
    struct named_arg a = { pool, NULL, name };
    rec_define(define_pool, &a);
}

static void define_info(tf_writer *w, void *arg)
{
    struct named_arg *a = arg;
    tf_write_info(w, a->key, a->value);
}

void rec_info(const char *key, const char *value)
{
    struct named_arg a = { 0, key, value };
    rec_define(define_info, &a);
}

/* Under the lock: how the log ends, then END. */
static void encode_end(const char *how)
{
    tf_write_info(writer, "ending", how);
    tf_event e = { .kind = TF_EV_END };
    encode(&e, &(struct captured){ .ticks = event_clock_early() }, rec_tid(), 0, NULL, NULL, 0);
}

void rec_end(const char *how)
{
    if (!rec_active() || !lock_take(rec_tid()))
        return;
    if (rec_active()) {
        encode_end(how);
        atomic_store(&recording, 0);
    }
    lock_release();
}

/* exec: the writer's place before the frame holding END, to go back to. */
static struct {
    int held;              /* rec_exec_begin took the lock */
    int ended;             /* and wrote END */
    tf_writer_mark mark;
    uint64_t last_seq;
} exec_state;

void rec_exec_begin(const char *how, tf_chunk *pending, tf_chunk *end)
{
    end->len = 0;
    if (pending)
        pending->len = 0;
    if (!writer || !lock_take(rec_tid()))
        return;
    exec_state.held = 1;
    if (!pending)
        return;   /* the lock alone: what is encoded stays in the writer */
    tf_writer_seal(writer, pending);
    if (!rec_active())
        return;
    exec_state.mark = tf_writer_get_mark(writer);
    exec_state.last_seq = last_seq;
    encode_end(how);
    tf_writer_seal(writer, end);
    exec_state.ended = 1;
}

void rec_exec_failed(void)
{
    if (!exec_state.held)
        return;
    if (exec_state.ended) {
        tf_writer_rewind(writer, &exec_state.mark);
        __atomic_store_n(&last_seq, exec_state.last_seq, __ATOMIC_RELAXED);
    }
    exec_state.held = exec_state.ended = 0;
    lock_release();
}

void rec_stop(void)
{
    atomic_store(&recording, 0);
}

/* The writer's intern tables are forgotten at a seal once they hold this
 * much (a log within a budget forgets them at every segment anyway).  A
 * program whose Python stacks never repeat (400,000 call sites made by
 * exec, each calling the pool once) grew the traced process by 500 bytes a
 * site for as long as it ran: 256 MB against 52 MB bare. */
#define INTERNED_MAX (32u << 20)

size_t rec_seal(tf_chunk *out)
{
    pid_t tid = rec_tid();
    if (!writer || !lock_take(tid))
        return 0;
    tf_writer_seal(writer, out);
    if (tf_writer_interned_bytes(writer) > INTERNED_MAX && tf_writer_forget_interned(writer) == 0)
        atomic_fetch_add(&generation, 1);   /* cached ids are stale */
    lock_release();
    return out->len;
}

size_t rec_seal_restate(tf_chunk *out, uint32_t segment, tf_chunk *restated)
{
    pid_t tid = rec_tid();
    restated->len = 0;
    if (!writer || !lock_take(tid))
        return 0;
    tf_writer_seal(writer, out);
    if (tf_writer_restate(writer, segment, restated) < 0)
        restated->len = 0;
    else   /* the writer forgot its stacks: cached ids are stale */
        atomic_fetch_add(&generation, 1);
    lock_release();
    return out->len;
}

uint64_t rec_event_count(void)
{
    return __atomic_load_n(&last_seq, __ATOMIC_RELAXED);
}

uint64_t rec_dropped_count(void)
{
    return atomic_load(&dropped);
}

void rec_fork_prepare(void)
{
    /* A fork from a signal handler that interrupted the recorder on this
     * thread finds the lock ours already: the interrupted code releases it,
     * and the child starts over anyway. */
    fork_took_lock = writer && lock_take(rec_tid());
}

void rec_fork_parent(void)
{
    if (fork_took_lock)
        lock_release();
    fork_took_lock = 0;
}

void rec_fork_child(const tf_header *h)
{
    thr.tid = 0;
    fork_took_lock = 0;
    atomic_store(&lock_owner, 0);
    if (!writer)
        return;
    /* The parent's writer holds the parent's unflushed records: drop them
     * with it.  The open operations belong to the parent's log too. */
    tf_writer_free(writer);
    writer = NULL;
    thr.open_count = 0;
    thr.open_top = 0;
    last_seq = 0;
    atomic_fetch_add(&generation, 1);
    atomic_store(&recording, 0);
    if (h)
        rec_start(h);
}
