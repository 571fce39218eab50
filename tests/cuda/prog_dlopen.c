/*
 * prog_dlopen.c - a library appears and goes away at run time: its module
 * must be in the log (with build-id and segments) and marked unloaded.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "trace_api.h"

int main(int argc, char **argv)
{
    void *h = dlopen(argc > 1 ? argv[1] : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 1;
    trace_mark("loaded");
    dlclose(h);
    trace_mark("unloaded");
    printf("ok\n");
    return 0;
}
