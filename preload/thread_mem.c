/*
 * thread_mem.c - a thread's mapping of the tracer's (see thread_mem.h).
 *
 * The thread's exit is learnt from a pthread key's destructor, which glibc
 * runs on the exiting thread while its TLS is still there.  An event
 * recorded later in the exit (another key's destructor) maps the thread a
 * new one, and registers it again: glibc then runs the destructors once
 * more (up to PTHREAD_DESTRUCTOR_ITERATIONS rounds; one mapped in the last
 * round stays).  A fork's child inherits its thread's mapping with the
 * pointer; those of the parent's other threads stay mapped in it unused.
 */
#include "thread_mem.h"

#include <pthread.h>
#include <sys/mman.h>

__thread thread_mem *thread_mem_here __attribute__((tls_model("initial-exec")));
/* mmap failed on this thread: no second try per event. */
static __thread int map_failed __attribute__((tls_model("initial-exec")));
static pthread_key_t key;
static int key_ok;

static void give_back(void *p)
{
    /* The pointer first: a signal handler that interrupts the unmapping
     * maps a new one instead of writing into this. */
    __atomic_store_n(&thread_mem_here, NULL, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    munmap(p, sizeof(thread_mem));
}

void thread_mem_init(void)
{
    key_ok = pthread_key_create(&key, give_back) == 0;
}

thread_mem *thread_mem_map(void)
{
    if (map_failed || !key_ok)
        return NULL;
    void *p = mmap(NULL, sizeof(thread_mem), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        map_failed = 1;
        return NULL;
    }
    /* A signal handler may have mapped one between the caller's look and
     * here (it ran to its end): that one stays. */
    thread_mem *none = NULL;
    if (!__atomic_compare_exchange_n(&thread_mem_here, &none, (thread_mem *)p, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED)) {
        munmap(p, sizeof(thread_mem));
        return none;
    }
    /* The key is made at start, among a process's first: glibc keeps its
     * value in the thread's descriptor, with no allocation. */
    if (pthread_setspecific(key, p) != 0) {
        __atomic_store_n(&thread_mem_here, NULL, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        munmap(p, sizeof(thread_mem));
        map_failed = 1;
        return NULL;
    }
    return p;
}
