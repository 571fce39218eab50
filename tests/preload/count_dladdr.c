/*
 * count_dladdr.c - preloaded before libtrace.so: counts the calls to
 * dladdr and dladdr1 that reach the global scope (libtrace.so's among
 * them) and prints the count at exit, for the test preload.start_dladdr:
 * dladdr searches an object's symbols for the nearest one, tens of
 * thousands of instructions a call, which a start that only wants an
 * object's file or link map need not pay.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

static int calls;

int dladdr(const void *addr, Dl_info *info)
{
    int (*real)(const void *, Dl_info *);
    *(void **)&real = dlsym(RTLD_NEXT, "dladdr");
    calls++;
    return real ? real(addr, info) : 0;
}

int dladdr1(const void *addr, Dl_info *info, void **extra, int flags)
{
    int (*real)(const void *, Dl_info *, void **, int);
    *(void **)&real = dlsym(RTLD_NEXT, "dladdr1");
    calls++;
    return real ? real(addr, info, extra, flags) : 0;
}

__attribute__((destructor)) static void report(void)
{
    char line[32];
    int n = snprintf(line, sizeof line, "dladdr calls: %d\n", calls);
    if (write(STDERR_FILENO, line, (size_t)n) < 0)
        return;
}
