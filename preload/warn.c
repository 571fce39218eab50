/*
 * warn.c - one line on stderr without stdio (see warn.h).
 */
#include "warn.h"
#include "config.h"
#include "recorder.h"
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
 * a program started with 2 closed has nothing of ours to hear.  Before the
 * look, lines are kept (say). */
static struct { dev_t dev; ino_t ino; int looked, open; } stderr_at_start;

static int stderr_unchanged(void)
{
    struct stat st;
    if (!stderr_at_start.open || fstat(STDERR_FILENO, &st) != 0)
        return 0;
    return st.st_dev == stderr_at_start.dev && st.st_ino == stderr_at_start.ino;
}

/* Lines given before trace_voice_init (the settings, read first): said or
 * not there, once the rule can be applied.  And the warnings meant for the
 * log given before the recorder started, for trace_warnings_to_log.  Both
 * filled at start, by the constructor's thread alone. */
#define KEPT_LINES 8
#define LINE_MAX_TEXT 400
static char unsaid[KEPT_LINES][LINE_MAX_TEXT];
static int nunsaid;
static char unlogged[KEPT_LINES][LINE_MAX_TEXT];
static int nunlogged, logging;

static void write_line(const char *text)
{
    if (!stderr_unchanged())
        return;
    char line[LINE_MAX_TEXT + 16];
    int n = snprintf(line, sizeof line, "trace: %s\n", text);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    line[len - 1] = '\n';
    /* Nothing to do about a failed write to stderr. */
    ssize_t ignored = write(STDERR_FILENO, line, len);
    (void)ignored;
}

static void say(const char *text)
{
    if (trace_config_get()->quiet)
        return;
    if (!stderr_at_start.looked) {
        if (nunsaid < KEPT_LINES)
            snprintf(unsaid[nunsaid++], LINE_MAX_TEXT, "%s", text);
        return;
    }
    if (trace_may_speak())
        write_line(text);
}

void trace_warn(const char *fmt, ...)
{
    int saved_errno = errno;
    char text[LINE_MAX_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    say(text);
    errno = saved_errno;
}

void trace_warn_log(const char *fmt, ...)
{
    int saved_errno = errno;
    char text[LINE_MAX_TEXT];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    say(text);
    if (logging)
        rec_info("warning", text);
    else if (nunlogged < KEPT_LINES)
        snprintf(unlogged[nunlogged++], LINE_MAX_TEXT, "%s", text);
    errno = saved_errno;
}

void trace_warnings_to_log(void)
{
    logging = 1;
    for (int i = 0; i < nunlogged; i++)
        rec_info("warning", unlogged[i]);
}

/* TRACE_EXIT_LINE=auto: the terminal of the program that started this
 * process (its parent's controlling terminal, /proc/PPID/stat field 7, in
 * the kernel's encoding of a device number), read at start, while that
 * parent is surely the one; -1 when it could not be read. */
static long parent_tty = -1;

static void read_parent_tty(void);

void trace_voice_init(void)
{
    if (stderr_at_start.looked)
        return;
    struct stat st;
    int terminal = 0;
    if (fstat(STDERR_FILENO, &st) == 0) {
        stderr_at_start.dev = st.st_dev;
        stderr_at_start.ino = st.st_ino;
        stderr_at_start.open = 1;
        terminal = S_ISCHR(st.st_mode) && isatty(STDERR_FILENO);
    }
    /* The parent's terminal matters only where a line could be written
     * (write_line: to the file stderr was at start, so a terminal, and
     * not silenced): a build's or a test runner's thousands of commands
     * with stderr on a pipe or a file asked /proc/PPID/stat for nothing,
     * four system calls each. */
    if (trace_config_get()->exit_line < 0 && !trace_config_get()->quiet && terminal)
        read_parent_tty();
    stderr_at_start.looked = 1;
    for (int i = 0; i < nunsaid; i++)
        say(unsaid[i]);
    nunsaid = 0;
}

static void read_parent_tty(void)
{
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
