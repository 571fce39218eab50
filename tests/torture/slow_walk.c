/*
 * slow_walk.c - preloaded before libtrace.so by torture.fork_walk: a
 * dl_iterate_phdr that sits 50 ms inside its first callback when a thread
 * other than the main one calls it.  dl_iterate_phdr holds the loader's lock
 * around its callbacks, so a stack walk of the tracer (libunwind looks up
 * unwind tables with it) then holds that lock long enough for the main
 * thread to fork in the middle, as a loaded machine does now and then.
 */
#include <dlfcn.h>
#include <link.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int (*phdr_cb)(struct dl_phdr_info *, size_t, void *);

struct wrapped {
    phdr_cb cb;
    void *data;
    int slept;
};

static int slow_callback(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct wrapped *w = arg;
    if (!w->slept && syscall(SYS_gettid) != getpid()) {
        w->slept = 1;
        struct timespec nap = { 0, 50000000 };
        nanosleep(&nap, NULL);
    }
    return w->cb(info, size, w->data);
}

int dl_iterate_phdr(phdr_cb cb, void *data)
{
    static int (*real)(phdr_cb, void *);
    if (!real)
        real = (int (*)(phdr_cb, void *))dlsym(RTLD_NEXT, "dl_iterate_phdr");
    struct wrapped w = { cb, data, 0 };
    return real(slow_callback, &w);
}
