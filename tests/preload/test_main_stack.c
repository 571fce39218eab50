/*
 * test_main_stack.c - the main thread's stack bounds parsed from
 * /proc/self/maps by hand (preload/main_stack.h) are pthread_getattr_np's,
 * under the stack limit this test starts with, smaller ones, and no limit (then the mapping below bounds
 * it): each limit in a child that execs this program again, since glibc
 * and the kernel read it as the process starts.  errno is kept.
 */
#include "main_stack.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int compare(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0 || pthread_attr_getstack(&attr, &addr, &size) != 0) {
        fprintf(stderr, "SKIP: pthread_getattr_np failed\n");
        return 77;
    }
    pthread_attr_destroy(&attr);
    uintptr_t lo = 1, hi = 2;
    errno = 42;
    int rc = main_stack_bounds(page, &lo, &hi);
    struct rlimit rl;
    getrlimit(RLIMIT_STACK, &rl);
    if (rc != 0 || errno != 42 || lo != (uintptr_t)addr || hi != (uintptr_t)addr + size) {
        fprintf(stderr, "FAIL: limit %#lx: rc %d errno %d [%#lx, %#lx), pthread_getattr_np [%#lx, %#lx)\n",
                (unsigned long)rl.rlim_cur, rc, errno, (unsigned long)lo, (unsigned long)hi,
                (unsigned long)addr, (unsigned long)addr + size);
        return 1;
    }
    printf("ok: limit %#lx: [%#lx, %#lx)\n", (unsigned long)rl.rlim_cur, (unsigned long)lo, (unsigned long)hi);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return compare();
    int failures = 0, skipped = 0;
    const rlim_t limits[] = { 0, 1024 * 1024, 256 * 1024, 136 * 1024, RLIM_INFINITY };   /* 0: as started */
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            struct rlimit rl;
            getrlimit(RLIMIT_STACK, &rl);
            if (limits[i]) {
                rl.rlim_cur = limits[i];
                if (rl.rlim_max != RLIM_INFINITY && (limits[i] == RLIM_INFINITY || limits[i] > rl.rlim_max))
                    _exit(77);   /* a hard limit in the way */
                if (setrlimit(RLIMIT_STACK, &rl) != 0)
                    _exit(77);
            }
            execl("/proc/self/exe", argv[0], "compare", (char *)NULL);
            _exit(3);
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
            fprintf(stderr, "FAIL: limit %#lx: child did not exit\n", (unsigned long)limits[i]);
            failures++;
        } else if (WEXITSTATUS(status) == 77) {
            skipped++;
        } else if (WEXITSTATUS(status) != 0) {
            failures++;
        }
    }
    if (failures)
        return 1;
    return skipped == sizeof limits / sizeof *limits ? 77 : 0;
}
