/*
 * fork_blocks - a large block allocated before fork() and freed in the
 * child: the child's log never saw it allocated, so it must not show its
 * release (a reader would call that a free of an unknown block); the parent
 * frees its own copy, which its log shows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *keep(void *p)
{
    /* The compiler may not drop a malloc/free pair it can see through. */
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

int main(void)
{
    char *p = keep(malloc(4u << 20));
    memset(p, 1, 4u << 20);
    printf("%llu\n", (unsigned long long)(uintptr_t)p);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        char *q = keep(malloc(3u << 20));   /* the child's own */
        memset(q, 2, 3u << 20);
        free(q);
        free(p);
        exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    free(p);
    printf("%d\n", (int)child);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
