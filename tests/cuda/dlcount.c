/*
 * dlcount.c - counts dlopen(RTLD_NOLOAD) calls made through the global
 * dlopen after libtrace.so's (a program linked with this library puts it
 * there), then forwards them.
 */
#include <dlfcn.h>

unsigned long dlcount_noload;

void *dlopen(const char *file, int mode)
{
    static void *(*next)(const char *, int);
    if (!next)
        next = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    if (mode & RTLD_NOLOAD)
        __atomic_add_fetch(&dlcount_noload, 1, __ATOMIC_RELAXED);
    return next ? next(file, mode) : 0;
}
