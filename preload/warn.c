/*
 * warn.c - one line on stderr without stdio (see warn.h).
 */
#include "warn.h"
#include "config.h"
#include "proc_stat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* What stderr was at start (trace_voice_init): a line is written only to
 * that same open file.  A daemon closes descriptor 2 and opens its data
 * there: "trace: lost ..." landed inside the program's own file (helper);
 * a program started with 2 closed has nothing of ours to hear. */
static struct { dev_t dev; ino_t ino; int looked, open; } stderr_at_start;

static int stderr_unchanged(void)
{
    struct stat st;
    if (!stderr_at_start.looked)
        return 1;   /* a setting's warning, before the look */
    if (!stderr_at_start.open || fstat(STDERR_FILENO, &st) != 0)
        return 0;
    return st.st_dev == stderr_at_start.dev && st.st_ino == stderr_at_start.ino;
}

static void say(const char *fmt, va_list ap)
{
    if (!stderr_unchanged())
        return;
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

/* TRACE_EXIT_LINE=auto: the terminal of the program that started this
 * process (its parent's controlling terminal, /proc/PPID/stat field 7, in
 * the kernel's encoding of a device number), read at start, while that
 * parent is surely the one; -1 when it could not be read. */
static long parent_tty = -1;

void trace_voice_init(void)
{
    struct stat st;
    if (fstat(STDERR_FILENO, &st) == 0) {
        stderr_at_start.dev = st.st_dev;
        stderr_at_start.ino = st.st_ino;
        stderr_at_start.open = 1;
    }
    stderr_at_start.looked = 1;
    if (trace_config_get()->exit_line >= 0)
        return;
    char path[32], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)getppid());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    const char *tty = proc_stat_field(buf, 7);
    if (tty)
        parent_tty = strtol(tty, NULL, 10);
}

/* Is stderr the terminal of the program that started us?  A terminal on
 * stderr is a person's only when it is also where this process was started
 * from: a program that runs a child on a terminal of its own (a pty: pty.spawn,
 * pexpect, expect, script, an IDE's runner) reads the child's output as its
 * data, and a line of ours in it is corrupt data (CPython's
 * test_pty.test_spawn_doesnt_hang compares it byte for byte). */
static int stderr_is_users_terminal(void)
{
    struct stat st;
    if (!isatty(STDERR_FILENO) || fstat(STDERR_FILENO, &st) != 0)
        return 0;
    if (parent_tty < 0)
        return 1;   /* nothing known of the parent (another user's, /proc hidden) */
    unsigned long t = (unsigned long)parent_tty;
    unsigned long tty_major = (t >> 8) & 0xfff, tty_minor = (t & 0xff) | ((t >> 12) & 0xfff00);
    return major(st.st_rdev) == tty_major && minor(st.st_rdev) == tty_minor;
}

int trace_may_speak(void)
{
    int line = trace_config_get()->exit_line;
    return line > 0 || (line < 0 && stderr_is_users_terminal());
}

void trace_note(const char *fmt, ...)
{
    if (trace_config_get()->quiet || !trace_may_speak())
        return;
    va_list ap;
    va_start(ap, fmt);
    say(fmt, ap);
    va_end(ap);
}
