/*
 * dupfd_spy.c - notes the lowest number each fcntl(F_DUPFD[_CLOEXEC]) of the
 * process asks for, and the size of the descriptor table then (FDSize in
 * /proc/self/status), one line per call appended to the file $DUPFD_SPY
 * (written at once: the processes watched end by _exit).  test_fork_threads.py
 * preloads it before libtrace.so, whose calls of fcntl then come here: the
 * recorder's descriptor must not be moved past the descriptor table's size
 * (preload/log_file.c, move_high).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long table_size(void)
{
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    char buf[1024];
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *p = strstr(buf, "\nFDSize:");
    return p ? strtol(p + 8, NULL, 10) : -1;
}

int fcntl(int fd, int cmd, ...)
{
    static int (*real)(int, int, ...);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "fcntl");
    va_list ap;
    va_start(ap, cmd);
    long arg = va_arg(ap, long);   /* every command's third argument fits a long */
    va_end(ap);
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
        const char *path = getenv("DUPFD_SPY");
        int out = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
        if (out >= 0) {
            char line[48];
            int n = snprintf(line, sizeof line, "%ld %ld\n", arg, table_size());
            if (write(out, line, (size_t)n) != n) {
                /* nothing to do: the test finds the line missing */
            }
            close(out);
        }
    }
    return real(fd, cmd, arg);
}
