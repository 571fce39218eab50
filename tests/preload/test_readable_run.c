/*
 * test_readable_run.c - readable pages below an address, asked of the
 * kernel a page at a time (preload/readable_run.h): runs of every length
 * across the module's batches of pages, ending at a PROT_NONE page, a hole
 * and a file mapping's end; a top inside a page; errno kept;
 * and all of it again where a seccomp filter refuses process_vm_readv (the
 * answers then come from rt_sigprocmask), with readable_bytes and
 * readable_gather (pieces copied whole up to the first that cannot be read,
 * across a guard, in a hole, too long) too.
 */
#include "readable_run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deny_syscalls.h"

static int failures;
static size_t page;

static void expect(const char *what, uintptr_t top, uintptr_t want, int rc_want, uintptr_t lo_want)
{
    uintptr_t lo = 12345;
    errno = 42;
    int rc = readable_run_down(top, want, page, &lo);
    if (errno != 42) {
        failures++;
        fprintf(stderr, "FAIL: %s: errno %d after the call\n", what, errno);
    }
    if (rc != rc_want || (rc >= 0 && lo != lo_want)) {
        failures++;
        fprintf(stderr, "FAIL: %s: rc %d lo %#lx, expected rc %d lo %#lx\n", what, rc, (unsigned long)lo,
                rc_want, (unsigned long)lo_want);
    }
}

static void expect_bytes(const char *what, const void *addr, size_t n, int want)
{
    errno = 42;
    int got = readable_bytes(addr, n);
    if (got != want || errno != 42) {
        failures++;
        fprintf(stderr, "FAIL: %s: readable_bytes %d (errno %d), expected %d\n", what, got, errno, want);
    }
}

/* readable_gather of pieces at the given sources, 24 bytes each: `want`
 * whole, and those copied equal to their source. */
static void expect_gather(const char *what, const char *const *srcs, int n, int want)
{
    char dst[4][24];
    readable_piece pieces[4];
    memset(dst, 0x5a, sizeof dst);
    for (int i = 0; i < n; i++)
        pieces[i] = (readable_piece){ .dst = dst[i], .src = srcs[i], .len = sizeof dst[i] };
    errno = 42;
    int got = readable_gather(pieces, n);
    int same = 1;
    for (int i = 0; i < got && i < n; i++)
        same = same && memcmp(dst[i], srcs[i], sizeof dst[i]) == 0;
    if (got != want || errno != 42 || !same) {
        failures++;
        fprintf(stderr, "FAIL: %s: readable_gather %d (errno %d, copies %s), expected %d\n", what, got,
                errno, same ? "right" : "wrong", want);
    }
}

#define PAGES 80

static int run_all(void)
{
    char *base = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    uintptr_t b = (uintptr_t)base, top = b + PAGES * page;
    char what[128];

    /* A run of k readable pages under the top, a guard page below it:
     * every length across the batches of 32. */
    for (int k = 1; k < PAGES - 1; k++) {
        uintptr_t guard = top - (uintptr_t)(k + 1) * page;
        mprotect(base, PAGES * page, PROT_READ | PROT_WRITE);
        mprotect((void *)guard, page, PROT_NONE);
        snprintf(what, sizeof what, "%d pages above a guard", k);
        expect(what, top, b, 0, guard + page);
        snprintf(what, sizeof what, "%d pages, down to the lowest", k);
        expect(what, top, guard + page, 1, guard + page);
        snprintf(what, sizeof what, "%d pages, down to the lowest's middle", k);
        expect(what, top, guard + page + page / 2, 1, guard + page);
        snprintf(what, sizeof what, "%d pages, from inside the top page", k);
        expect(what, top - page / 2, b, 0, guard + page);
    }
    mprotect(base, PAGES * page, PROT_READ | PROT_WRITE);
    expect("all readable down to the mapping's start", top, b, 1, b);
    expect("want above top: top's page alone", top - page, top + 5 * page, 1, top - 2 * page);

    /* The top's own page unreadable: nothing readable. */
    mprotect(base + 40 * page, page, PROT_NONE);
    expect("top page unreadable", b + 40 * page + 16, b, 0, b + 41 * page);
    mprotect(base + 40 * page, page, PROT_READ | PROT_WRITE);

    /* A hole. */
    munmap(base + 10 * page, page);
    expect("a hole", top, b, 0, b + 11 * page);

    /* A file mapped past its end: the pages after it would raise SIGBUS. */
    char name[] = "/tmp/readable_runXXXXXX";
    int fd = mkstemp(name);
    if (fd < 0 || ftruncate(fd, (off_t)page) != 0) {
        perror("file");
        return 1;
    }
    unlink(name);
    char *file = mmap(NULL, 3 * page, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (file == MAP_FAILED) {
        perror("mmap file");
        return 1;
    }
    uintptr_t f = (uintptr_t)file;
    expect("file past its end", f + 3 * page, f, 0, f + 3 * page);
    expect("file within it", f + page, f, 1, f);

    /* Bytes: within a page, at a page's end before an unreadable one,
     * across into it, in it. */
    mprotect(base + 20 * page, page, PROT_NONE);
    expect_bytes("8 bytes in a page", base + 5 * page + 64, 8, 1);
    expect_bytes("the last 4 bytes before a guard", base + 20 * page - 4, 4, 1);
    expect_bytes("8 bytes across into a guard", base + 20 * page - 4, 8, 0);
    expect_bytes("in a guard", base + 20 * page + 8, 8, 0);
    expect_bytes("in a hole", base + 10 * page, 1, 0);
    expect_bytes("nothing", NULL, 0, 1);

    for (size_t i = 0; i < PAGES * page; i += 8)
        if (i / page != 10 && i / page != 20)
            memcpy(base + i, &i, sizeof i);
    const char *two_ok[] = { base + 5 * page + 64, base + 30 * page - 12 };
    expect_gather("two readable pieces, one across pages", two_ok, 2, 2);
    const char *second_bad[] = { base + 5 * page, base + 20 * page - 8, base + 6 * page };
    expect_gather("the second piece across into a guard", second_bad, 3, 1);
    const char *first_bad[] = { base + 10 * page + 8, base + 6 * page };
    expect_gather("the first piece in a hole", first_bad, 2, 0);
    const char *in_guard[] = { base + 7 * page, base + 8 * page, base + 20 * page };
    expect_gather("the third piece in a guard", in_guard, 3, 2);
    const char *wrap[] = { (const char *)(uintptr_t)-8 };
    expect_gather("a piece past the address space's end", wrap, 1, 0);
    char small;
    readable_piece big = { .dst = &small, .src = base, .len = READABLE_PIECE_MAX + 1 };
    errno = 42;
    if (readable_gather(&big, 1) != 0 || errno != 42) {
        failures++;
        fprintf(stderr, "FAIL: a piece too long was copied\n");
    }
    munmap(base, PAGES * page);
    munmap(file, 3 * page);
    return 0;
}

int main(void)
{
    page = (size_t)sysconf(_SC_PAGESIZE);
    if (run_all())
        return 1;
    /* Again where process_vm_readv is refused. */
    pid_t child = fork();
    if (child == 0) {
        int nrs[] = { SYS_process_vm_readv };
        if (!deny_syscalls(nrs, 1, SECCOMP_RET_ERRNO | EPERM))
            _exit(77);
        if (syscall(SYS_process_vm_readv, (long)getpid(), NULL, 0L, NULL, 0L, 0L) != -1 || errno != EPERM)
            _exit(78);
        failures = 0;
        _exit(run_all() || failures ? 1 : 0);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) {
        failures++;
        fprintf(stderr, "FAIL: the refused case's child did not exit\n");
    } else if (WEXITSTATUS(status) == 77) {
        printf("with process_vm_readv refused: skipped, no seccomp filter here\n");
    } else if (WEXITSTATUS(status) != 0) {
        failures++;
        fprintf(stderr, "FAIL: with process_vm_readv refused (exit %d)\n", WEXITSTATUS(status));
    }
    if (failures)
        return 1;
    printf("ok\n");
    return 0;
}
