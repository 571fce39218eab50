/*
 * thread_mem.h - what the tracer keeps per thread outside TLS: one mapping
 * per thread, made at its first use (the main thread's at start), given
 * back at the thread's exit.  It holds the thread's alternate signal stack
 * too (alt_stack.h), below the thread_mem, with a guard page under that.
 *
 * glibc carves the static TLS of every initially loaded object out of every
 * thread's stack, also of threads that never record anything.  Ours was
 * 1,388 bytes (the open operations, the thread's names, its open
 * collections): a thread of 16 KiB had 1.3 KiB less than bare, and one that
 * came within that of its end died traced before any hook ran.  Here it
 * costs a pointer in TLS, and the pages are touched only as they are used
 * (the stack memos, most of it, by a thread that records native stacks).
 *
 * Each part belongs to one module and is laid out here only by its size;
 * the owner checks that its own type fits.
 */
#ifndef TRACE_THREAD_MEM_H
#define TRACE_THREAD_MEM_H

#include "recorder.h"

#include <stdint.h>

/* recorder.c: the operations open on the thread under its innermost one
 * (that one stays in TLS, read by every event), outermost first. */
#define THREAD_MEM_OPEN_OPS 63
/* python_gc.c: the collections open on the thread, and the blocks of its
 * callback's arguments. */
#define THREAD_MEM_GC_BYTES 400
/* native_stack.c: the stack memos. */
#define THREAD_MEM_MEMO_BYTES 9728
/* recorder.c: a py_alloc's Python frames (its usual way, py_alloc_fast). */
#define THREAD_MEM_PY_FRAMES_BYTES 2048

typedef struct thread_mem {
    uint64_t open_ops[THREAD_MEM_OPEN_OPS];
    /* recorder.c: the thread's names as its last THREAD record gave them. */
    char os_name[16];
    char py_name[REC_THREAD_NAME_MAX];
    /* python_threads.c: its threading.Thread name as last found. */
    char py_found[REC_THREAD_NAME_MAX];
    _Alignas(16) unsigned char gc[THREAD_MEM_GC_BYTES];
    _Alignas(16) unsigned char py_frames[THREAD_MEM_PY_FRAMES_BYTES];
    _Alignas(64) unsigned char stack_memos[THREAD_MEM_MEMO_BYTES];
} thread_mem;

extern __thread thread_mem *thread_mem_here __attribute__((tls_model("initial-exec")));

/* Once at start. */
void thread_mem_init(void);

thread_mem *thread_mem_map(void);

/* The calling thread's, mapped if it has none yet; NULL when that failed
 * (then the owner does without: each says how).  Callable in a signal
 * handler: a system call or two the first time, a load after. */
static inline thread_mem *thread_mem_get(void)
{
    thread_mem *m = thread_mem_here;
    return __builtin_expect(m != NULL, 1) ? m : thread_mem_map();
}

/* The calling thread's if it has one: never maps (under the recorder's
 * lock, where a system call would keep every other thread waiting). */
static inline thread_mem *thread_mem_peek(void)
{
    return thread_mem_here;
}

#endif
