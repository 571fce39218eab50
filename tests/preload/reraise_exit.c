/*
 * reraise_exit.c - a program whose handler for SIGTERM and SIGINT does what
 * Go's runtime does with a signal it does not keep (dieFromSignal): put
 * SIG_DFL back, unblock the signal, raise it twice, and when the process
 * is still alive, end it with status 2 by the raw system call.  It never
 * returns to the code the signal interrupted.
 *
 *   reraise_exit exit|_exit
 *
 * Records four large blocks (TRACE_HOST_BUFFERS=1), then ends through
 * exit(0) or _exit(0).  reraise_exit.sh sends the signal while that ending
 * finishes the log: bare, the process dies of it; under the tracer it must
 * too, with the log whole (before the fix, status 2 and no log: the signal
 * was noted for the interrupted ending, which never ran again).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void die_from_signal(int sig)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    raise(sig);
    syscall(SYS_exit_group, 2);
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = die_from_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    for (int i = 0; i < 4; i++) {
        void *volatile p = malloc(2 << 20);
        free(p);
    }
    if (argc > 1 && strcmp(argv[1], "_exit") == 0)
        _exit(0);
    exit(0);
}
