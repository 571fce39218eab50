/*
 * thread_stack.c - the calling thread's stack bounds (see thread_stack.h).
 *
 * The first question on a thread may well come from a signal handler, which
 * may have interrupted anything, so the bounds are found with system calls
 * alone.  Not with pthread_getattr_np: it takes the thread's own lock and
 * calls realloc under it (glibc), so a handler that interrupted that very
 * call (ASan's thread start makes it, so do JVMs and other runtimes that
 * size their stacks) waited for itself forever; and for the main thread it
 * reads /proc/self/maps with stdio.  The main thread's come from
 * main_stack.h, once at start.  Another thread's descriptor (pthread_self)
 * sits at the top of its stack block, above every frame (glibc puts it
 * there, for stacks it maps and for stacks the program gives), so its stack
 * is the run of readable memory from below the frame up to it, and no
 * further: the memory above may be a neighbouring mapping that happens to
 * join the stack, and the memos read up to thread_stack_hi for as long as
 * the thread lives.  The run is checked only as far down as a caller asks,
 * and further once a deeper frame asks, until it ends (the stack's guard
 * page: then never again).  A frame that is not below its thread's
 * descriptor, within STACK_MAX, is not on the thread's stack (a signal
 * stack, a coroutine's, a thread not made by pthread_create); nor one below
 * where the run ended.  A stack given by the program with no guard page
 * below it reads on into whatever lies there and is taken as that much
 * larger.
 */
#include "thread_stack.h"
#include "main_stack.h"
#include "readable_run.h"
#include "recorder_core.h"

#include <pthread.h>
#include <unistd.h>

/* A frame further below its thread's descriptor than this is on another
 * stack (a coroutine's that happens to lie below): checking that far would
 * ask the kernel about every page between (2,048 calls for 256 MiB). */
#define STACK_MAX ((uintptr_t)256 << 20)

#define TLS __thread __attribute__((tls_model("initial-exec")))
TLS uintptr_t thread_stack_lo, thread_stack_hi;
static TLS int floor_found;   /* the stack ends at thread_stack_lo */

static uintptr_t main_lo, main_hi;
static size_t page_size = 4096;

void thread_stack_init(void)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && (page & (page - 1)) == 0)
        page_size = (size_t)page;
    uintptr_t lo, hi;
    if (rec_tid() == getpid() && main_stack_bounds(page_size, &lo, &hi) == 0) {
        main_lo = lo;
        main_hi = hi;
    }
}

int thread_stack_reach_slow(uintptr_t here, uintptr_t want)
{
    if (!thread_stack_hi) {
        uintptr_t top = (uintptr_t)pthread_self();
        if (main_hi && here >= main_lo && here < main_hi) {
            thread_stack_lo = main_lo;
            thread_stack_hi = main_hi;
            floor_found = 1;
        } else if (rec_tid() != getpid() && here < top && top - here <= STACK_MAX) {
            thread_stack_lo = thread_stack_hi = top;
        } else {
            return 0;   /* not known to be the thread's own: asked again next time */
        }
    }
    if (here >= thread_stack_hi || thread_stack_hi - here > STACK_MAX)
        return 0;
    if (want > here)
        want = here;
    if (want < thread_stack_lo && !floor_found) {
        uintptr_t lo;
        if (!readable_run_down(thread_stack_lo, want, page_size, &lo))
            floor_found = 1;
        if (lo < thread_stack_lo)
            thread_stack_lo = lo;
    }
    return here >= thread_stack_lo;
}
