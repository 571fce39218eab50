/*
 * hook_stack.c - how much stack the calling thread has left, and a few
 * stacks of ours for when that is too little (see hook_stack.h).
 *
 * The thread's stack is thread_stack.h's: only as far down as an event
 * needed is checked, so a thread's first event asks the kernel once, a
 * deeper one again, and a thread whose stack ends less than HOOK_STACK_ROOM
 * below its stack pointer knows that without asking again.
 */
#include "hook_stack.h"
#include "own_stack.h"
#include "thread_stack.h"

#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Eight mapped at start: as many threads at once as need one.  A ninth
 * maps a stack for the one event and unmaps it after (tens of
 * microseconds, where all eight are taken).  It must not wait for one of
 * the eight: their holders may be waiting for it, e.g. for the GIL it holds
 * (an event's work can run Python code: CuPy's registration, an attach).
 * 128 KiB each: four times the room a thread's own stack must have, mapped
 * without reserve, so what is never touched costs address space only. */
#define SLOTS 8
#define SLOT_SIZE (128u * 1024)
__thread uintptr_t hook_room_from __attribute__((tls_model("initial-exec")));
__thread uintptr_t hook_room_span __attribute__((tls_model("initial-exec")));
__thread int hook_stack_aside __attribute__((tls_model("initial-exec")));

static char *pool;                    /* SLOTS x (guard page, stack) */
static size_t slot_stride, page_size = 4096;
static _Atomic int busy[SLOTS];

void hook_stack_init(void)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && (page & (page - 1)) == 0)
        page_size = (size_t)page;
    slot_stride = page_size + SLOT_SIZE;
    char *p = mmap(NULL, SLOTS * slot_stride, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return;
    /* An overflow of one faults instead of writing into the next. */
    for (int i = 0; i < SLOTS; i++)
        mprotect(p + (size_t)i * slot_stride, page_size, PROT_NONE);
    pool = p;
}

void hook_stack_fork_child(void)
{
    /* The child's one thread may be on a stack of ours (a fork from a
     * signal handler that interrupted an event there): that one stays. */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t lo = (uintptr_t)pool + (size_t)i * slot_stride;
        if (!pool || sp < lo || sp >= lo + slot_stride)
            atomic_store(&busy[i], 0);
    }
}

/* Does sp have HOOK_STACK_ROOM below it on this thread's stack?  The
 * window the fast check uses is set from what is known either way (the
 * stack memos may have found the bounds first). */
static int room_at(uintptr_t sp)
{
    if (sp < HOOK_STACK_ROOM || !thread_stack_reach(sp, sp - HOOK_STACK_ROOM))
        return 0;
    uintptr_t from = thread_stack_lo + HOOK_STACK_ROOM;
    hook_room_from = from;
    hook_room_span = thread_stack_hi > from ? thread_stack_hi - from : 0;
    return sp - HOOK_STACK_ROOM >= thread_stack_lo;
}

static void run_at(void (*fn)(void *), void *arg, uintptr_t top)
{
    hook_stack_aside++;
    trace_run_on_stack(fn, arg, (void *)(top & ~(uintptr_t)15));
    hook_stack_aside--;
}

/* A stack for one event when the eight are taken: straight from the
 * kernel (our own mmap hook, or an interposer of the program's, would
 * record or count it), guard page below.  0: no memory for one. */
static int run_on_fresh(void (*fn)(void *), void *arg)
{
    void *p = (void *)syscall(SYS_mmap, NULL, slot_stride, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED || (uintptr_t)p > (uintptr_t)-4096)
        return 0;
    syscall(SYS_mprotect, p, page_size, PROT_NONE);
    run_at(fn, arg, (uintptr_t)p + slot_stride);
    syscall(SYS_munmap, p, slot_stride);
    return 1;
}

static void run_aside(void (*fn)(void *), void *arg)
{
    for (unsigned spins = 0;; spins++) {
        for (int i = 0; i < SLOTS; i++) {
            if (atomic_load_explicit(&busy[i], memory_order_relaxed) ||
                atomic_exchange_explicit(&busy[i], 1, memory_order_acquire))
                continue;
            run_at(fn, arg, (uintptr_t)pool + (size_t)(i + 1) * slot_stride);
            atomic_store_explicit(&busy[i], 0, memory_order_release);
            return;
        }
        /* A slot comes back within microseconds unless its holder waits
         * for us; a few tries, then a stack of this event's own.  Without
         * memory for one, waiting is all there is. */
        if (spins >= 4 && run_on_fresh(fn, arg))
            return;
        if (spins > 64)
            sched_yield();
    }
}

void hook_stack_run(void (*fn)(void *), void *arg)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    /* Already on one of ours (a signal handler that interrupted an event
     * there): a slot is four times the room an event needs. */
    if (!pool || (sp >= (uintptr_t)pool && sp < (uintptr_t)pool + SLOTS * slot_stride) ||
        room_at(sp)) {
        fn(arg);
        return;
    }
    run_aside(fn, arg);
}
