/*
 * hook_stack.c - how much stack the calling thread has left, and a few
 * stacks of ours for when that is too little (see hook_stack.h).
 *
 * A thread's stack is found as native_stack.c finds it, with system calls
 * alone (the first event may be in a signal handler that interrupted
 * anything): the main thread's from its attributes at start; another's top
 * is its descriptor (pthread_self, at the top of the block glibc maps or is
 * given), and it reaches down as far as the memory below the stack pointer
 * reads (readable_run.h), to its guard page.  Only as far down as an event
 * needed is checked, so a thread's first event asks the kernel once, a
 * deeper one again, and a thread whose stack ends less than HOOK_STACK_ROOM
 * below its stack pointer knows that without asking again.  A stack given
 * by the program with no guard page below it reads on into whatever lies
 * there and is taken as that much larger.
 */
#include "hook_stack.h"
#include "native_stack.h"
#include "own_stack.h"
#include "readable_run.h"
#include "recorder_core.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

/* Eight: as many threads at once as need one; a ninth waits for the first
 * to come back (an event's work, microseconds).  128 KiB each: four times
 * the room a thread's own stack must have, mapped without reserve, so what
 * is never touched costs address space only. */
#define SLOTS 8
#define SLOT_SIZE (128u * 1024)
/* A stack pointer further below its thread's descriptor than this is on
 * another stack (a coroutine's that happens to lie below). */
#define STACK_MAX ((uintptr_t)256 << 20)

#define TLS static __thread __attribute__((tls_model("initial-exec")))
__thread uintptr_t hook_room_from __attribute__((tls_model("initial-exec")));
__thread uintptr_t hook_room_span __attribute__((tls_model("initial-exec")));
__thread int hook_stack_aside __attribute__((tls_model("initial-exec")));
TLS uintptr_t thread_lo, thread_hi;   /* checked readable; hi == 0: not known */
TLS int thread_floor;                 /* the stack ends at thread_lo */

static char *pool;                    /* SLOTS x (guard page, stack) */
static size_t slot_stride, page_size = 4096;
static _Atomic int busy[SLOTS];
static uintptr_t main_lo, main_hi;

void hook_stack_init(void)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && (page & (page - 1)) == 0)
        page_size = (size_t)page;
    native_stack_main_bounds(&main_lo, &main_hi);
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

static void set_window(void)
{
    uintptr_t from = thread_lo + HOOK_STACK_ROOM;
    hook_room_from = from;
    hook_room_span = thread_hi > from ? thread_hi - from : 0;
}

/* Does sp have HOOK_STACK_ROOM below it on this thread's stack? */
static int room_at(uintptr_t sp)
{
    if (!thread_hi) {
        uintptr_t top = (uintptr_t)pthread_self();
        if (main_hi && sp >= main_lo && sp < main_hi) {
            thread_lo = main_lo;
            thread_hi = main_hi;
            thread_floor = 1;
        } else if (rec_tid() != getpid() && sp < top && top - sp <= STACK_MAX) {
            thread_lo = thread_hi = top;
        } else {
            return 0;   /* not known to be the thread's own: asked again next time */
        }
    }
    if (sp >= thread_hi || thread_hi - sp > STACK_MAX || sp < HOOK_STACK_ROOM)
        return 0;
    uintptr_t want = sp - HOOK_STACK_ROOM;
    if (want < thread_lo && !thread_floor) {
        uintptr_t lo;
        if (!readable_run_down(thread_lo, want, page_size, &lo))
            thread_floor = 1;
        if (lo < thread_lo)
            thread_lo = lo;
    }
    set_window();
    return want >= thread_lo;
}

static void run_aside(void (*fn)(void *), void *arg)
{
    for (unsigned spins = 0;; spins++) {
        for (int i = 0; i < SLOTS; i++) {
            if (atomic_load_explicit(&busy[i], memory_order_relaxed) ||
                atomic_exchange_explicit(&busy[i], 1, memory_order_acquire))
                continue;
            uintptr_t top = ((uintptr_t)pool + (size_t)(i + 1) * slot_stride) & ~(uintptr_t)15;
            hook_stack_aside++;
            trace_run_on_stack(fn, arg, (void *)top);
            hook_stack_aside--;
            atomic_store_explicit(&busy[i], 0, memory_order_release);
            return;
        }
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
