/*
 * join_signal.c - sends the signal $JOIN_SIGNAL (a number) to the main
 * thread at its first pthread_join, then joins.  Preloaded before
 * libtrace.so into a program with no threads of its own, the main thread's
 * first join is the recorder's, in its exit ending (flusher_stop, after END
 * is written): a signal that lands while the log is being finished.  The
 * log must still be whole, and the process must die of the signal
 * (cuda_test.py, signals).  Joins on other threads are left alone: the
 * flusher joins a helper of its own as it stops, with every signal blocked,
 * and a signal sent there was never delivered (exit 0, a flaky test).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int pthread_join(pthread_t thread, void **result)
{
    static int (*real)(pthread_t, void **);
    static int sent;
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_join");
    const char *sig = getenv("JOIN_SIGNAL");
    if (sig && !sent && syscall(SYS_gettid) == getpid()) {
        sent = 1;
        syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), atoi(sig));
    }
    return real(thread, result);
}
