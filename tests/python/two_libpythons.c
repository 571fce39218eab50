/*
 * two_libpythons together|swap LIBA LIBB - a plugin host with two versions
 * of libpython in one process, each opened RTLD_LOCAL (no global lookup
 * reaches either).  Built by test_two_libpythons.py.
 *
 *   together: both opened; A initialised and run, its thread state
 *             released; B initialised, run and finalised; A taken back,
 *             run again and finalised.
 *   swap:     A opened, initialised, run, finalised and closed; then the
 *             same with B.
 *
 * Each library's Py_Initialize calls its Py_InitializeEx through its own
 * PLT, which reaches the preload's: the tracer sent B's call to A's (the
 * first libpython it found), so B was never initialised and the program
 * aborted in B's PyEval_SaveThread ("the GIL is released"), or, in the swap,
 * A was initialised again and the program crashed.  Whatever the tracer
 * makes of B, the program must run as it does bare.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "embed_round.h"

struct py {
    void *lib;
    void (*initialize)(void);
    int (*initialized)(void);
    int (*run)(const char *);
    int (*finalize)(void);
    void *(*save)(void);
    void (*restore)(void *);
};

static int open_py(const char *path, struct py *p)
{
    p->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 0;
    }
    *(void **)&p->initialize = dlsym(p->lib, "Py_Initialize");
    *(void **)&p->initialized = dlsym(p->lib, "Py_IsInitialized");
    *(void **)&p->run = dlsym(p->lib, "PyRun_SimpleString");
    *(void **)&p->finalize = dlsym(p->lib, "Py_FinalizeEx");
    *(void **)&p->save = dlsym(p->lib, "PyEval_SaveThread");
    *(void **)&p->restore = dlsym(p->lib, "PyEval_RestoreThread");
    return p->initialize && p->initialized && p->run && p->finalize && p->save && p->restore;
}

/* The round's collection, then the version, so the output says who ran. */
static int run_round(struct py *p, const char *name)
{
    if (!p->initialized()) {
        printf("%s: not initialised\n", name);
        return 0;
    }
    char code[200];
    snprintf(code, sizeof code, "import sys; print('%s', '%%d.%%d' %% sys.version_info[:2], flush=True)",
             name);
    return p->run(round_code) == 0 && p->run(code) == 0;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 64;
    struct py a, b;
    if (!strcmp(argv[1], "together")) {
        if (!open_py(argv[2], &a) || !open_py(argv[3], &b))
            return 65;
        a.initialize();
        if (!run_round(&a, "A"))
            return 1;
        void *a_state = a.save();
        b.initialize();
        printf("after B's initialisation: A %d, B %d\n", a.initialized(), b.initialized());
        fflush(stdout);
        if (!run_round(&b, "B"))
            return 2;
        if (b.finalize() != 0)
            return 3;
        a.restore(a_state);
        if (!run_round(&a, "A"))
            return 4;
        if (a.finalize() != 0)
            return 5;
    } else if (!strcmp(argv[1], "swap")) {
        for (int i = 0; i < 2; i++) {
            struct py *p = i ? &b : &a;
            if (!open_py(argv[2 + i], p))
                return 65;
            p->initialize();
            if (!run_round(p, i ? "B" : "A"))
                return 10 + i;
            if (p->finalize() != 0)
                return 20 + i;
            dlclose(p->lib);
        }
    } else {
        return 64;
    }
    printf("done\n");
    return 0;
}
