/*
 * embed_dlopen LIBPYTHON local|global - a program that does not link
 * libpython but opens it at run time, as plugin hosts do, and runs two
 * rounds of embed_rounds.c's code through what dlsym finds in it.  With
 * RTLD_LOCAL no global lookup reaches the library: the tracer's own
 * Py_InitializeEx, called by libpython's Py_Initialize, must still find the
 * real one (it found none, skipped the interpreter's initialisation and the
 * program crashed in its first allocation).  Built by test_interpreters.py.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "embed_round.h"

int main(int argc, char **argv)
{
    if (argc != 3)
        return 64;
    int mode = RTLD_NOW | (strcmp(argv[2], "local") == 0 ? RTLD_LOCAL : RTLD_GLOBAL);
    void *lib = dlopen(argv[1], mode);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 65;
    }
    void (*initialize)(void) = (void (*)(void))dlsym(lib, "Py_Initialize");
    int (*initialized)(void) = (int (*)(void))dlsym(lib, "Py_IsInitialized");
    int (*run)(const char *) = (int (*)(const char *))dlsym(lib, "PyRun_SimpleString");
    int (*finalize)(void) = (int (*)(void))dlsym(lib, "Py_FinalizeEx");
    if (!initialize || !initialized || !run || !finalize)
        return 66;
    for (int round = 0; round < 2; round++) {
        initialize();
        if (!initialized())
            return 3;
        if (run(round_code) != 0)
            return 1;
        if (finalize() != 0)
            return 2;
    }
    printf("rounds done\n");
    return 0;
}
