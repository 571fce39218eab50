/*
 * big_tls.c - a program whose static TLS (4 MiB) does not fit in the stacks
 * the recorder gives its two threads (test_address_space.py): they must
 * start anyway, with the default stacks.  One large malloc is its event
 * (run with TRACE_HOST_BUFFERS=1); it prints how many threads it has once
 * the flusher has had time to run.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static __thread char big[4 << 20];

int main(void)
{
    big[sizeof big - 1] = 1;
    char *p = malloc(64 << 20);
    if (!p)
        return 2;
    memset(p, 1, 4096);
    usleep(300000);
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    printf("block %d threads %d\n", p[4095], n);
    free(p);
    return big[sizeof big - 1] - 1;
}
