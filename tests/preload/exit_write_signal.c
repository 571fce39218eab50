/*
 * exit_write_signal.c - sends SIGTERM to the calling thread at its first
 * write once _exit() has begun: the tracer's flush of the log's end, on the
 * program's own thread, with the flusher's token held (go_exit_signal.sh).
 * Preloaded before libtrace.so, so both _exit and the tracer's writes come
 * here first.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static _Atomic int exiting, sent;

static void send_once(void)
{
    if (atomic_load(&exiting) && !atomic_exchange(&sent, 1))
        syscall(SYS_tgkill, (long)getpid(), (long)syscall(SYS_gettid), (long)SIGTERM);
}

void _exit(int status)
{
    atomic_store(&exiting, 1);
    void (*real)(int) = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
    real(status);
    for (;;)
        ;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    ssize_t (*real)(int, const void *, size_t) =
        (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    send_once();
    return real(fd, buf, n);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    ssize_t (*real)(int, const void *, size_t, off_t) =
        (ssize_t (*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
    send_once();
    return real(fd, buf, n, off);
}
