/*
 * reload_libpython LIBA LIBB global|local fin|nofin [threads] - an embedder
 * that opens one libpython, runs Python in it, closes it (after
 * Py_FinalizeEx, or without it), then opens LIBB (another version, or the
 * same one again) and does the same.  Built by test_reload_libpython.py.
 *
 * Each round prints the interpreter's version, what a collection of the
 * cycles it made collected, how many rounds this interpreter's builtins
 * have seen, and whether the library is still loaded after its dlclose:
 * all of it must read as it does bare.  The tracer's lookups of libpython's
 * symbols (dlsym(RTLD_DEFAULT) made it undeletable) and its handle of an
 * RTLD_LOCAL one kept the first library loaded: a second version opened
 * RTLD_GLOBAL bound to the first one's functions (the round printed the
 * first's version, then crashed in Py_FinalizeEx), and the same library
 * opened again without Py_FinalizeEx came back with its old interpreter
 * (round 2 where bare says 1).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Automatic collections are off, so the count is the cycles made here
 * (their timing would depend on every allocation before). */
static const char *round_code =
    "import gc, sys, builtins\n"
    "gc.disable()\n"
    "gc.collect()\n"
    "builtins.ROUNDS = getattr(builtins, 'ROUNDS', 0) + 1\n"
    "class C:\n"
    "    pass\n"
    "def make():\n"
    "    for i in range(50):\n"
    "        a = C(); b = C(); a.o = b; b.o = a\n"
    "        l = [a]; l.append(l)\n"
    "make()\n"
    "n = gc.collect()\n"
    "gc.enable()\n"
    "print(NAME, '%d.%d' % sys.version_info[:2], 'collected', n, 'round', builtins.ROUNDS, flush=True)\n";

/* Threads that make cycles and collect; joined, then given time to leave
 * libpython's code before it is unmapped. */
static const char *thread_code =
    "import threading, gc, time\n"
    "def work():\n"
    "    for i in range(200):\n"
    "        x = [[]]; x[0].append(x)\n"
    "    gc.collect()\n"
    "ts = [threading.Thread(target=work) for _ in range(3)]\n"
    "[t.start() for t in ts]\n"
    "[t.join() for t in ts]\n"
    "time.sleep(0.2)\n";

int main(int argc, char **argv)
{
    if (argc < 5)
        return 64;
    int mode = RTLD_NOW | (strcmp(argv[3], "local") ? RTLD_GLOBAL : RTLD_LOCAL);
    int finalize = !strcmp(argv[4], "fin");
    int threads = argc > 5 && !strcmp(argv[5], "threads");
    for (int i = 0; i < 2; i++) {
        const char *name = i ? "B" : "A";
        void *lib = dlopen(argv[1 + i], mode);
        if (!lib) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 65;
        }
        void (*initialize)(void) = (void (*)(void))dlsym(lib, "Py_Initialize");
        int (*run)(const char *) = (int (*)(const char *))dlsym(lib, "PyRun_SimpleString");
        int (*finalize_ex)(void) = (int (*)(void))dlsym(lib, "Py_FinalizeEx");
        if (!initialize || !run || !finalize_ex)
            return 66;
        initialize();
        if (threads && run(thread_code) != 0)
            return 2;
        if (run(i ? "NAME = 'B'" : "NAME = 'A'") != 0 || run(round_code) != 0)
            return 3;
        if (finalize && finalize_ex() != 0)
            return 4;
        dlclose(lib);
        void *again = dlopen(argv[1 + i], RTLD_NOW | RTLD_NOLOAD);
        printf("%s after dlclose: %s\n", name, again ? "still loaded" : "unloaded");
        fflush(stdout);
        if (again)
            dlclose(again);
    }
    printf("done\n");
    return 0;
}
