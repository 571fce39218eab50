/*
 * main_stack.c - the main thread's stack bounds from /proc/self/maps,
 * parsed by hand (main_stack.h says why).
 */
#include "main_stack.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The dynamic loader's: the highest address of the stack's frames (the
 * initial stack pointer, above which argv and the environment lie). */
extern void *__libc_stack_end;

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int main_stack_bounds(size_t page, uintptr_t *lo, uintptr_t *hi)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) != 0)
        return -1;
    int saved_errno = errno;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        errno = saved_errno;
        return -1;
    }
    const uintptr_t end = (uintptr_t)__libc_stack_end;
    /* glibc: the stack ends with the page holding __libc_stack_end. */
    const uintptr_t stack_end = (end + page) & ~(uintptr_t)(page - 1);
    /* Each line "from-to perms ...": from and to are parsed as the bytes
     * come, so a line may straddle two reads.  field 0: from, 1: to, 2:
     * the rest of the line, 3: the rest of a line that is not addresses. */
    uintptr_t from = 0, to = 0, last_to = 0;
    int field = 0, digits = 0, found = 0;
    char buf[1024];
    ssize_t n;
    while (!found && (n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (field >= 2) {
                /* The rest of the line: memchr, not a byte at a time
                 * (58,000 instructions for a small process's 4 KiB of
                 * maps that way). */
                const char *nl = memchr(buf + i, '\n', (size_t)(n - i));
                if (!nl)
                    break;
                i = nl - buf;
            }
            char c = buf[i];
            if (c == '\n') {
                /* A line that does not start with two addresses is passed
                 * over, as glibc's sscanf check does. */
                if (field >= 1 && field <= 2 && digits > 0) {
                    if (from <= end && end < to) {
                        found = 1;
                        break;
                    }
                    last_to = to;
                }
                from = to = 0;
                field = digits = 0;
                continue;
            }
            int d = hex_digit(c);
            if (d >= 0) {
                if (field == 0)
                    from = from << 4 | (uintptr_t)d;
                else
                    to = to << 4 | (uintptr_t)d;
                digits++;
            } else if (field == 0 && c == '-' && digits > 0) {
                field = 1;
                digits = 0;
            } else if (field == 1 && digits > 0) {
                field = 2;   /* the end of `to`: the rest of the line is not ours */
            } else {
                field = 3;   /* a line of another shape */
            }
        }
    }
    close(fd);
    errno = saved_errno;
    if (!found)
        return -1;
    /* nptl/pthread_getattr_np.c: the limit less what lies above the
     * stack's end, rounded down to a page, and no lower than the mapping
     * below. */
    uintptr_t size = (uintptr_t)rl.rlim_cur - (to - stack_end);
    size &= ~(uintptr_t)(page - 1);
    if (size > stack_end - last_to)
        size = stack_end - last_to;
    *lo = stack_end - size;
    *hi = stack_end;
    return 0;
}
