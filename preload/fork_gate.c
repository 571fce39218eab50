/*
 * fork_gate.c - see fork_gate.h.
 *
 * A count of the walkers inside and the forking thread's id, both atomic
 * (sequentially consistent: a walker counts itself, then looks at the gate;
 * the forker closes the gate, then looks at the count, so one of them sees
 * the other).  The forking thread passes its own closed gate (a signal
 * handler may record an event while it prepares), and does not wait for
 * itself when the fork came from a handler that interrupted its own walk.
 * The wait is bounded: a walker that never comes out (a thread stopped by a
 * debugger) must not stop the fork, which then goes on as it did before the
 * gate existed.
 */
#include "fork_gate.h"
#include "recorder_core.h"

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

/* How long a fork waits for the walkers inside: one stack walk takes
 * microseconds, or as long as the machine keeps the walker off the CPU. */
#define CLOSE_WAIT_NS 2000000000LL

static _Atomic pid_t closed_by;   /* the thread preparing a fork, 0: open */
static _Atomic int inside;        /* walkers between enter and leave */
static __thread __attribute__((tls_model("initial-exec"))) int my_inside;   /* this thread's (handlers nest) */

void fork_gate_enter(void)
{
    pid_t me = 0;
    for (;;) {
        atomic_fetch_add(&inside, 1);
        pid_t by = atomic_load(&closed_by);
        if (by == 0 || by == (me ? me : (me = rec_tid())))
            break;
        atomic_fetch_sub(&inside, 1);
        while (atomic_load(&closed_by) != 0)
            sched_yield();
    }
    my_inside++;
}

void fork_gate_leave(void)
{
    my_inside--;
    atomic_fetch_sub(&inside, 1);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void fork_gate_close(void)
{
    atomic_store(&closed_by, rec_tid());
    if (atomic_load(&inside) <= my_inside)
        return;
    long long give_up = now_ns() + CLOSE_WAIT_NS;
    struct timespec nap = { 0, 50000 };
    while (atomic_load(&inside) > my_inside && now_ns() < give_up)
        nanosleep(&nap, NULL);
}

void fork_gate_open(void)
{
    atomic_store(&closed_by, 0);
}

void fork_gate_child(void)
{
    atomic_store(&inside, my_inside);
    atomic_store(&closed_by, 0);
}
