/*
 * prog_signal.c - dying of a fatal signal after allocating.
 *   handler: installs its own SIGSEGV handler (after the tracer's) that
 *            prints and exits 7, then faults;
 *   abort:   default SIGABRT action.
 */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_segv(int sig)
{
    (void)sig;
    static const char msg[] = "app handler ran\n";
    ssize_t n = write(STDOUT_FILENO, msg, sizeof msg - 1);
    _exit(n > 0 ? 7 : 8);
}

int main(int argc, char **argv)
{
    void *p;
    cudaMalloc(&p, 777);
    if (argc > 1 && !strcmp(argv[1], "handler")) {
        struct sigaction sa = { .sa_handler = on_segv }, back;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
        sigaction(SIGSEGV, NULL, &back);
        printf("reads back own handler: %d\n", back.sa_handler == on_segv);
        fflush(stdout);
        raise(SIGSEGV);
    } else {
        abort();
    }
    return 0;
}
