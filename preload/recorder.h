/*
 * recorder.h - the one door through which events enter the log.
 *
 * Every hook (CUDA, Python, the pool-annotation API) fills a tf_event with its
 * kind's own fields and calls rec_event() (the two kinds every object makes
 * under TRACE_PY_ALLOCS have doors of their own, rec_py_alloc and
 * rec_py_free, that record the same); the recorder gives it its place in
 * the total order (seq), thread id, time, parent operation and stacks, and
 * encodes it.  Safe from any thread; never allocates a Python object; holds no
 * lock across a call out of the recorder.
 *
 * Causal order, which every hook keeps: a release (a free, an unmap, a
 * pool's free, a segment given back) is recorded BEFORE the real call that
 * makes the memory reusable, an allocation AFTER the real call that handed
 * it out returns.  Then seq order respects real happens-before for every
 * address: no thread can be handed memory, and record it, before the release
 * of that memory is in the log.  A release whose real call then fails is
 * followed by a release_failed event naming it (cuda_record.h).
 */
#ifndef TRACE_RECORDER_H
#define TRACE_RECORDER_H

#include <stddef.h>
#include <stdint.h>
#include "trace_format.h"

/* Flags for rec_event. */
#define REC_NATIVE_STACK 0x1u /* capture the native stack (up to the configured depth) */
#define REC_PY_STACK     0x2u /* capture the Python stack when this thread may read it */
#define REC_OPEN         0x4u /* the event opens an operation: events on this
                                 thread nest under it until rec_close() */
#define REC_PY_CHECKED   0x8u /* with REC_PY_STACK: through capture_checked (below) */
#define REC_STACKS (REC_NATIVE_STACK | REC_PY_STACK)

/* Nonzero once the recorder writes events (started, not refused, not failed). */
int rec_active(void);

/* Record one event.  Fills e->seq, tid, t_ns, parent, native_stack, py_stack.
 * Returns the event's seq, or 0 when nothing was recorded. */
uint64_t rec_event(tf_event *e, unsigned flags);
/* The same for an event that names a string (a mark's text, a type name):
 * text is interned under the same lock as the event, into *text_id (a field
 * of e), so the definition is in the same segment of the log as the event
 * (a log kept within TRACE_MAX_BYTES forgets its strings at each segment). */
uint64_t rec_event_text(tf_event *e, unsigned flags, uint32_t *text_id, const char *text);

/* An object's allocation: what rec_event records for a tf_event of kind
 * TF_EV_PY_ALLOC with domain TF_HOST_OBJ, these u.host fields, and flags.
 * With flags REC_PY_STACK (TRACE_PY_ALLOCS: every GC allocation may be
 * one) by a way of its own that skips what cannot apply to it, and writes
 * the same record. */
uint64_t rec_py_alloc(uint64_t ptr, uint64_t size, uint32_t api, unsigned flags);

/* A py_free (TF_EV_PY_FREE) of the block at ptr in domain (enum
 * tf_host_domain), recorded without stacks and, in a run of them, without a
 * clock reading of its own: it takes the time of the PY_FREES record it
 * joins (tf_write_py_free_joins).  Its seq, or 0 when nothing was recorded. */
uint64_t rec_py_free(uint32_t domain, uint64_t ptr);

/* Close the operation opened by the event with this seq (the innermost open
 * one on this thread).  Call it before recording the closing event, whose
 * parent is then the operation's own parent. */
void rec_close(uint64_t seq);

/* A check of the operations open on this thread, run before each event
 * recorded while one is (rec_event, rec_event_text): it may close one that
 * has ended unseen (rec_close, and record its closing event), so that the
 * event is not nested in it.  python_gc.c's: a collection whose "stop"
 * callback never came (gc.callbacks changed during it). */
typedef void (*rec_open_check)(void);
/* Each setter here returns the one it replaced. */
rec_open_check rec_set_open_check(rec_open_check check);

/* Definitions, interned under the recorder's lock.  A string's id is good
 * until the log starts its next segment: events use rec_event_text. */
uint32_t rec_string(const char *s);
void rec_pool(uint32_t pool, const char *name);
void rec_info(const char *key, const char *value);

/*
 * The Python side plugs its stack reader in here.  capture() runs outside the
 * recorder's lock on the thread recording the event: it returns 0 when this
 * thread may not read Python state (no GIL, no interpreter), else the number
 * of raw frames written (innermost first, at most max; a stack deeper than
 * that ends with one standing for the rest).  intern() runs under
 * the lock, on the same thread right after, and turns raw frames into a
 * py_stack id with tf_write_py_code/tf_write_py_stack.  capture_checked
 * is capture for events that may come while the thread state names memory
 * being rewritten (a large host block freed inside a greenlet switch,
 * python_greenlet.h): it reads that memory only through checked copies
 * where that can be so, and is capture itself everywhere else.
 */
typedef struct rec_py_raw { uint64_t code; uint64_t where; } rec_py_raw;
typedef struct rec_py_provider {
    int (*capture)(rec_py_raw *frames, int max);
    int (*capture_checked)(rec_py_raw *frames, int max);
    uint32_t (*intern)(tf_writer *w, const rec_py_raw *frames, int n);
} rec_py_provider;
const rec_py_provider *rec_set_py_provider(const rec_py_provider *p);

/*
 * Thread names.  The OS name (prctl / pthread_setname_np) is the recorder's
 * own business; the Python side names threads through a namer: called
 * outside the lock on the thread recording an event, with the version of
 * the Python name (threading.Thread.name) the recorder last wrote for this
 * thread, it returns the version of the name it knows now (0: none yet) and,
 * only when that differs from `seen`, writes the name into buf.  So an event
 * whose thread was not renamed pays a compare, not a copy.  A THREAD record
 * with both names goes before the thread's first event in a log and
 * whenever one of them changed.
 */
#define REC_THREAD_NAME_MAX 64
/* It also sets *ask_after: the recorder does not call it again for this
 * thread before the latest event's time reaches that (unless a THREAD
 * record is due anyway): a call per event was 40 instructions of about
 * 1,500 with every GC allocation recorded (bench/workloads/threaded). */
typedef uint32_t (*rec_thread_namer)(uint32_t seen, char *buf, size_t cap, uint64_t *ask_after);
rec_thread_namer rec_set_thread_namer(rec_thread_namer fn);
/* Some thread's OS name changed (thread_names.c). */
void rec_threads_renamed(void);

#endif
