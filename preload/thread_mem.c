/*
 * thread_mem.c - a thread's mapping of the tracer's (see thread_mem.h).
 *
 * The thread's exit is learnt from a pthread key's destructor, which glibc
 * runs on the exiting thread while its TLS is still there.  An event
 * recorded later in the exit (another key's destructor) maps the thread a
 * new one, and registers it again: glibc then runs the destructors once
 * more (up to PTHREAD_DESTRUCTOR_ITERATIONS rounds; one mapped in the last
 * round stays).  A fork's child inherits its thread's mapping with the
 * pointer (and its alternate signal stack with it); those of the parent's
 * other threads stay mapped in it unused.
 *
 * The mapping is a guard page, the thread's alternate signal stack
 * (alt_stack.h), then the thread_mem: one mmap per thread for both.
 */
#include "thread_mem.h"
#include "alt_stack.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

__thread thread_mem *thread_mem_here __attribute__((tls_model("initial-exec")));
/* mmap failed on this thread: no second try per event. */
static __thread int map_failed __attribute__((tls_model("initial-exec")));
static pthread_key_t key;
static int key_ok;
static size_t page_size = 4096;

/* Below the thread_mem: its alternate stack, and the guard page under that. */
static size_t below(void)
{
    return page_size + ALT_STACK_SIZE;
}

static void unmap(void *m)
{
    munmap((char *)m - below(), below() + sizeof(thread_mem));
}

static void give_back(void *p)
{
    /* The pointer first: a signal handler that interrupts the unmapping
     * maps a new one instead of writing into this. */
    __atomic_store_n(&thread_mem_here, NULL, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* A thread ended from a handler running on that stack keeps it. */
    if (alt_stack_release((char *)p - ALT_STACK_SIZE))
        unmap(p);
}

void thread_mem_init(void)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && (page & (page - 1)) == 0 && (size_t)page <= ALT_STACK_SIZE)
        page_size = (size_t)page;
    key_ok = pthread_key_create(&key, give_back) == 0;
}

thread_mem *thread_mem_map(void)
{
    if (map_failed || !key_ok)
        return NULL;
    char *base = mmap(NULL, below() + sizeof(thread_mem), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        map_failed = 1;
        return NULL;
    }
    /* An overflow of the alternate stack faults instead of writing below. */
    mprotect(base, page_size, PROT_NONE);
    thread_mem *p = (thread_mem *)(base + below());
    /* A signal handler may have mapped one between the caller's look and
     * here (it ran to its end): that one stays. */
    thread_mem *none = NULL;
    if (!__atomic_compare_exchange_n(&thread_mem_here, &none, p, 0, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED)) {
        unmap(p);
        return none;
    }
    /* The key is made at start, among a process's first: glibc keeps its
     * value in the thread's descriptor, with no allocation. */
    if (pthread_setspecific(key, p) != 0) {
        __atomic_store_n(&thread_mem_here, NULL, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        unmap(p);
        map_failed = 1;
        return NULL;
    }
    /* Only now: the mapping is the thread's for as long as it lives. */
    alt_stack_take(base + page_size);
    return p;
}
