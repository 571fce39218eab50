/*
 * segv_early.c - the app's SIGSEGV handler (see segv_early.h).  Built twice:
 * into segv_app, and as libsegv_early.so whose constructor installs it before
 * the preload starts (the loader runs a program's needed libraries'
 * constructors before those of LD_PRELOAD libraries).
 */
#include "segv_early.h"

#include <dlfcn.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

sigjmp_buf segv_recovery;
volatile sig_atomic_t segv_handled;
int segv_installed_first;

static void on_segv(int sig)
{
    (void)sig;
    segv_handled++;
    siglongjmp(segv_recovery, 1);
}

void segv_install_handler(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
}

#ifdef SEGV_EARLY
/* Ask the kernel, not the (interposed) sigaction, whose SIGSEGV handler is
 * in place: one from libtrace.so means the preload started before us.  (A
 * sanitizer runtime's handler may be there already; that one does not
 * count.) */
static int preload_started_first(void)
{
    unsigned long act[4] = { 0 };   /* handler, flags, restorer, mask */
    Dl_info where;
    if (syscall(SYS_rt_sigaction, SIGSEGV, NULL, act, sizeof(unsigned long)) != 0)
        return 0;
    return act[0] > (unsigned long)SIG_IGN && dladdr((void *)act[0], &where) &&
           where.dli_fname && strstr(where.dli_fname, "libtrace");
}

__attribute__((constructor)) static void install_early(void)
{
    segv_installed_first = !preload_started_first();
    segv_install_handler();
}
#endif
