/*
 * no_unshare.c - run a program that cannot unshare its descriptor table:
 * unshare(2), and close_range(2) with CLOSE_RANGE_UNSHARE, fail with EPERM,
 * as under a seccomp policy that does not know close_range (container
 * runtimes' default ones before 2021, which also refuse unshare).  The
 * tracer's flusher then has no helper thread with a table of its own and
 * does its file work in the program's table (preload/private_files.h).
 * close_range without that flag still works (the programs under test
 * close their descriptors with it).
 *
 *   no_unshare PROGRAM [ARG...]
 *
 * Exit 77 where no filter can be installed (another architecture, a
 * kernel without seccomp filters).
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/close_range.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#endif

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: no_unshare PROGRAM [ARG...]\n");
        return 2;
    }
#ifdef THIS_ARCH
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 2),
        /* the flags' low word (little-endian) */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLOSE_RANGE_UNSHARE, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog prog = { .len = sizeof code / sizeof code[0], .filter = code };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("no_unshare: seccomp");
        return 77;
    }
    execvp(argv[1], argv + 1);
    perror("no_unshare: exec");
    return 127;
#else
    fprintf(stderr, "no_unshare: no filter for this architecture\n");
    return 77;
#endif
}
