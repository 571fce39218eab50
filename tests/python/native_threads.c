/*
 * native_threads - threads made in C, not by Python, that call into Python
 * (test_native_threads.py, through ctypes): the way grpcio's completion
 * queue threads, sqlite3's user functions on a library's thread, cffi and
 * ctypes callbacks reach the interpreter, each call taking the GIL with
 * PyGILState_Ensure on a thread CPython has no state for (a thread state
 * made and dropped per call).  Beside the callbacks each thread mallocs and
 * frees blocks of up to 28 KiB, so its own allocations interleave with the
 * interpreter's.  A thread of this library can also end the process while
 * the others call Python: exit, SIGTERM or abort.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef long (*callback)(long thread, long call);

#define MAX_THREADS 32

struct worker { callback cb; long id, calls, sum; };

static void *work(void *p)
{
    struct worker *w = p;
    for (long i = 0; i < w->calls; i++) {
        char *m = malloc(64 + (size_t)(i % 8) * 4096);
        if (m)
            memset(m, 1, 64);
        w->sum += w->cb(w->id, i);
        free(m);
    }
    return NULL;
}

/* n threads each making `calls` calls of cb; the sum of what cb returned,
 * or -1 when a thread could not be made. */
long run_threads(callback cb, long n, long calls)
{
    pthread_t t[MAX_THREADS];
    struct worker w[MAX_THREADS];
    long sum = 0, made = 0;
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    for (long i = 0; i < n; i++) {
        w[i] = (struct worker){ .cb = cb, .id = i, .calls = calls, .sum = 0 };
        if (pthread_create(&t[i], NULL, work, &w[i]) != 0)
            break;
        made++;
    }
    for (long i = 0; i < made; i++) {
        pthread_join(t[i], NULL);
        sum += w[i].sum;
    }
    return made == n ? sum : -1;
}

struct ending { int how, code; unsigned delay_us; };

static void *end_process(void *p)
{
    const struct ending *e = p;
    usleep(e->delay_us);
    if (e->how == 0)
        exit(e->code);
    if (e->how == 1)
        raise(SIGTERM);
    abort();
}

/* A detached thread that ends the process after delay_us: how 0 exit(code),
 * 1 SIGTERM, 2 abort.  0 when the thread was made. */
int end_from_thread(int how, int code, unsigned delay_us)
{
    static struct ending e;
    pthread_t t;
    e = (struct ending){ .how = how, .code = code, .delay_us = delay_us };
    if (pthread_create(&t, NULL, end_process, &e) != 0)
        return -1;
    pthread_detach(t);
    return 0;
}
