/*
 * overflow.c - a stack overflow in C, for tests/preload/overflow.sh.
 *
 *   overflow main      mark "overflow next", then recurse until the main
 *                      thread's stack runs out
 *   overflow thread    the same on a thread made with a 64 KiB stack
 *   overflow measure   an alternate stack painted first: a child forked
 *                      here sets an alternate signal stack of
 *                      ALT_STACK_SIZE bytes (alt_stack.h), in memory shared
 *                      with us, then overflows as "main" does; once it is
 *                      dead (our handler ran on that stack: ours is never
 *                      put over the program's), print "status S used N of
 *                      M": how many bytes of it the kernel's frame and our
 *                      ending took
 *   overflow has_alt   print "altstack SIZE" (0: none) for the main thread
 *                      and, after a mark there, a new thread's, then exit 0
 */
#include "trace_api.h"
#include "alt_stack.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAINT 0xA5

/* Never reached: the compiler may not call the recursion infinite. */
static volatile int deepest = 1 << 30;

/* A frame that cannot be folded into a loop: it uses its buffer after the
 * call. */
static __attribute__((noinline)) int recurse(int depth)
{
    volatile char pad[256];
    pad[0] = (char)depth;
    if (depth >= deepest)
        return 0;
    return recurse(depth + 1) + pad[0];
}

static void *overflow(void *arg)
{
    (void)arg;
    trace_mark("overflow next");
    recurse(0);
    return NULL;
}

static size_t alt_size(void)
{
    stack_t now;
    if (sigaltstack(NULL, &now) != 0 || (now.ss_flags & SS_DISABLE))
        return 0;
    return now.ss_size;
}

static void *report_alt(void *arg)
{
    (void)arg;
    trace_mark("thread");
    printf("thread altstack %zu\n", alt_size());
    return NULL;
}

static int on_thread(void *(*fn)(void *), size_t stack)
{
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    if (stack)
        pthread_attr_setstacksize(&attr, stack);
    if (pthread_create(&t, &attr, fn, NULL) != 0)
        return 2;
    pthread_join(t, NULL);
    return 0;
}

static int measure(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, page + ALT_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || mprotect(p, page, PROT_NONE) != 0)
        return 2;
    char *lo = p + page;
    memset(lo, PAINT, ALT_STACK_SIZE);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        stack_t ss = { .ss_sp = lo, .ss_size = ALT_STACK_SIZE };
        if (sigaltstack(&ss, NULL) != 0)
            _exit(2);
        overflow(NULL);
        _exit(3);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return 2;
    size_t untouched = 0;
    while (untouched < ALT_STACK_SIZE && (unsigned char)lo[untouched] == PAINT)
        untouched++;
    printf("status %d used %zu of %u\n", WIFSIGNALED(status) ? -WTERMSIG(status) : WEXITSTATUS(status),
           ALT_STACK_SIZE - untouched, ALT_STACK_SIZE);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(mode, "main")) {
        overflow(NULL);
    } else if (!strcmp(mode, "thread")) {
        return on_thread(overflow, 64 * 1024);
    } else if (!strcmp(mode, "measure")) {
        return measure();
    } else if (!strcmp(mode, "has_alt")) {
        printf("main altstack %zu\n", alt_size());
        return on_thread(report_alt, 0);
    }
    fprintf(stderr, "usage: overflow main|thread|measure|has_alt\n");
    return 2;
}
