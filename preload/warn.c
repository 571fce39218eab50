/*
 * warn.c - one line on stderr without stdio (see warn.h).
 */
#include "warn.h"
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static void say(const char *fmt, va_list ap)
{
    char line[512];
    int saved_errno = errno;
    int n = snprintf(line, sizeof line, "trace: ");
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    if (m < 0)
        m = 0;
    size_t len = (size_t)n + ((size_t)m < sizeof line - (size_t)n - 1 ? (size_t)m
                                                                        : sizeof line - (size_t)n - 2);
    line[len++] = '\n';
    /* Nothing to do about a failed write to stderr. */
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
    errno = saved_errno;
}

void trace_warn(const char *fmt, ...)
{
    if (trace_config_get()->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    say(fmt, ap);
    va_end(ap);
}
