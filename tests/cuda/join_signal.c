/*
 * join_signal.c - sends the signal $JOIN_SIGNAL (a number) to the main
 * thread as its exit ending wakes the flusher for the last flush, after
 * END is written: a signal that lands while the log is being finished.
 * The log must still be whole, and the process must die of the signal
 * (cuda_test.py, signals).  Preloaded before libtrace.so into a program
 * with no threads of its own.
 *
 * That moment is the main thread's first futex call through syscall() (the
 * recorder's futex.h) once exit() has begun (an atexit handler of ours,
 * which runs before any destructor): the wake in flusher_stop_for_exit.
 * Not a wait: the flusher may be done before the exiting thread would wait
 * (then it does not), and the test passed with no signal sent.  Not
 * pthread_join, as before: the flusher is no longer joined at exit.  Calls
 * on other threads are left alone: the tracer's threads block every
 * signal, and a signal sent there was never delivered (exit 0).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef long (*syscall_fn)(long, ...);

static _Atomic int exiting;

static void on_exit_begun(void)
{
    atomic_store(&exiting, 1);
}

__attribute__((constructor)) static void init(void)
{
    atexit(on_exit_begun);
}

long syscall(long number, ...)
{
    static syscall_fn real;
    static int sent;
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "syscall");
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    const char *sig = getenv("JOIN_SIGNAL");
    if (number == SYS_futex && sig && atomic_load(&exiting) && !sent) {
        long tid = real(SYS_gettid);
        if (tid == getpid()) {
            sent = 1;
            real(SYS_tgkill, (long)getpid(), tid, (long)atoi(sig));
        }
    }
    return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
