/*
 * test_got_redirect.c - got_redirect.c on its own: libraries' slots for a
 * function the program defines are pointed at a replacement, whether bound
 * lazily (PLT, not resolved yet), at load (RTLD_NOW) or through GLOB_DAT in
 * read-only RELRO pages; a library bound to its own definition keeps it; a
 * second call rewrites nothing; a library loaded later is taken by the next
 * call.  Arguments: the fixture built as plt, now (-fno-plt -z now), own
 * (defines the function) and a second plt.
 */
#include "got_redirect.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int got_target_fn(int x);
int got_target_fn(int x)        /* the program's: exported, it wins */
{
    return x + 1;
}

static int replacement(int x)
{
    return x + 2;
}

typedef int (*call_fn)(int);
static int failures;

static void expect(int got, int want, const char *what)
{
    if (got != want) {
        fprintf(stderr, "FAIL: %s: %d, expected %d\n", what, got, want);
        failures++;
    }
}

static call_fn load(const char *path, int mode)
{
    void *h = dlopen(path, mode);
    call_fn fn = h ? (call_fn)(void (*)(void))dlsym(h, "got_call") : NULL;
    if (!fn) {
        fprintf(stderr, "FAIL: cannot load %s: %s\n", path, dlerror());
        exit(1);
    }
    return fn;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: test_got_redirect PLT NOW OWN PLT2\n");
        return 2;
    }
    if (!got_redirect_supported()) {
        printf("SKIP: no GOT relocations known on this architecture\n");
        return 77;
    }
    call_fn lazy = load(argv[1], RTLD_LAZY | RTLD_LOCAL);     /* never called before: unresolved */
    call_fn now = load(argv[2], RTLD_NOW | RTLD_LOCAL);
#if defined(__SANITIZE_ADDRESS__)
    call_fn own = NULL;      /* the sanitizer's runtime refuses RTLD_DEEPBIND */
#else
    call_fn own = load(argv[3], RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    expect(own(1), 1001, "own before");
#endif
    expect(now(1), 2, "now before");

    got_target t = { .name = "got_target_fn", .from = (void *)got_target_fn, .to = (void *)replacement };
    expect((int)got_redirect(&t, 1), 2, "slots rewritten");
    expect(lazy(1), 3, "plt, lazy");
    expect(now(1), 3, "no-plt, now, RELRO");
    if (own)
        expect(own(1), 1001, "own definition kept");
    expect(got_target_fn(1), 2, "the program's own call");
    expect((int)got_redirect(&t, 1), 0, "second call");

    call_fn later = load(argv[4], RTLD_NOW | RTLD_LOCAL);
    expect(later(1), 2, "loaded later, before the call");
    expect((int)got_redirect(&t, 1), 1, "loaded later: slots rewritten");
    expect(later(1), 3, "loaded later, after the call");
    if (failures)
        return 1;
    printf("got_redirect: all checks passed\n");
    return 0;
}
