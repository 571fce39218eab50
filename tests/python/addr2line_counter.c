/*
 * addr2line_counter.c - counts the calls of PyCode_Addr2Line made from
 * outside libpython (test_lines.py preloads it before libtrace.so, whose
 * look-up of the function then finds this one), and writes the count to
 * the file $ADDR2LINE_COUNT at exit.  The recorder reads line tables
 * itself (preload/python_lines.c); a call here means it fell back.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long calls;

int PyCode_Addr2Line(void *code, int offset)
{
    static int (*real)(void *, int);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "PyCode_Addr2Line");
    calls++;
    return real ? real(code, offset) : -1;
}

__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("ADDR2LINE_COUNT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "%lu\n", calls);
        fclose(f);
    }
}
