/*
 * foreign_libs.c - a program whose environment brings its own libunwind.so.8
 * and libzstd.so.1 (preload.foreign_libs, foreign_libs.py).
 *
 *   foreign_libs [LIB...]
 *
 * Each LIB is dlopen'ed (by its path, or by its bare name through
 * LD_LIBRARY_PATH) and its marker function called: the program's calls
 * must reach its own copy, not the tracer's.  Then a few
 * large host blocks, whose native stacks the tracer records with
 * TRACE_HOST_BUFFERS=1 (its own libunwind, whatever the program's is).
 * Prints what it did; exits 0, or 1 when a library or marker is missing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG ((size_t)4 << 20)

#ifdef LINKED
int foreign_unwind_marker(void);
#endif

/* Not inlined: its frame is looked for in the recorded stacks. */
__attribute__((noinline)) static int foreign_libs_blocks(void)
{
    int sum = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char *p = malloc(BIG);
        if (!p)
            return -1;
        memset(p, i, BIG);
        sum += p[BIG / 2];
        free(p);
    }
    return sum;
}

int main(int argc, char **argv)
{
#ifdef LINKED
    printf("linked libunwind.so.8: marker %d\n", foreign_unwind_marker());
#endif
    for (int i = 1; i < argc; i++) {
        void *h = dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL);
        if (!h) {
            printf("dlopen %s: %s\n", argv[i], dlerror());
            return 1;
        }
        const char *name = strstr(argv[i], "plugin") ? "foreign_plugin_marker"
                           : strstr(argv[i], "zstd") ? "foreign_zstd_marker"
                                                     : "foreign_unwind_marker";
        int (*marker)(void) = (int (*)(void))dlsym(h, name);
        if (!marker) {
            printf("%s: no marker (not the program's own copy)\n", argv[i]);
            return 1;
        }
        printf("%s: marker %d\n", strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i], marker());
    }
    printf("blocks: %d\n", foreign_libs_blocks());
    return 0;
}
