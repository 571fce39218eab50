/*
 * dl_error_kept - what dlerror() says is the program's own: nothing after
 * a call that succeeded, the program's failure after one that failed.  The
 * tracer looks symbols up itself at start, after each dlopen (is this an
 * embedder's libpython? a CUDA library?) and dlclose, and each failed
 * lookup of its own sets the thread's dlerror state, which the program
 * would read as the answer to its own call.  The program prints what
 * dlerror() says at each step: the same traced as bare.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/mman.h>

static void say(const char *step)
{
    const char *e = dlerror();
    printf("%s: %s\n", step, e ? e : "(none)");
}

int main(void)
{
    say("start");
    /* A recorded event (TRACE_HOST_BUFFERS=1): the hooks below run with
     * recording on. */
    void *m = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED)
        munmap(m, 2u << 20);
    void *libc = dlopen("libc.so.6", RTLD_NOW);
    say("dlopen libc.so.6 (loaded)");
    void *self = dlopen(NULL, RTLD_NOW);
    say("dlopen NULL");
    if (!dlopen("libdl_error_kept_absent.so", RTLD_NOW))
        say("dlopen absent");
    void *libm = dlopen("libm.so.6", RTLD_NOW);
    say("dlopen libm.so.6");
    if (libm && dlsym(libm, "cos"))
        say("dlsym cos");
    if (libm && !dlsym(libm, "dl_error_kept_absent"))
        say("dlsym absent");
    if (libm && dlclose(libm) == 0)
        say("dlclose libm.so.6");
    if (self && dlclose(self) == 0)
        say("dlclose NULL");
    if (libc && dlclose(libc) == 0)
        say("dlclose libc.so.6");
    return 0;
}
