/*
 * deny_syscalls.h - a seccomp filter, on the calling thread (and the
 * threads and processes it starts), that answers some system calls with
 * one action: SECCOMP_RET_ERRNO | EPERM as a container's policy refuses a
 * call, SECCOMP_RET_KILL_PROCESS where a test must know that a call was
 * never made.  (tests/cuda/refuse.c also looks at a call's flags.)
 */
#ifndef TESTS_DENY_SYSCALLS_H
#define TESTS_DENY_SYSCALLS_H

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>

#define DENY_MAX 8

/* 1 when installed; 0 where no filter can be (another architecture, a
 * kernel without seccomp filters). */
static inline int deny_syscalls(const int *nrs, int n, unsigned action)
{
#if defined(__x86_64__)
    if (n < 1 || n > DENY_MAX)
        return 0;
    struct sock_filter code[4 + DENY_MAX + 2] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    };
    int len = 4;
    /* Check i of n: on a match, over the remaining checks and the allow. */
    for (int i = 0; i < n; i++)
        code[len++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nrs[i],
                                                   (unsigned char)(n - i), 0);
    code[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    code[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action);
    struct sock_fprog prog = { .len = (unsigned short)len, .filter = code };
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
#else
    (void)nrs;
    (void)n;
    (void)action;
    return 0;
#endif
}

#endif
