/*
 * prog_fork.c - allocations before a fork, in the child, and in the parent
 * after it.  Prints "who pid api ptr" lines.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void alloc(const char *who, size_t size)
{
    void *p = NULL;
    cudaMalloc(&p, size);
    printf("%s %d cudaMalloc %llu\n", who, (int)getpid(), (unsigned long long)(uintptr_t)p);
    fflush(stdout);
}

int main(void)
{
    alloc("parent", 1000);
    pid_t child = fork();
    if (child == 0) {
        alloc("child", 2000);
        alloc("child", 3000);
        exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    alloc("parent", 4000);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
