/*
 * refuse.c - run a program under a seccomp filter that refuses some system
 * calls with EPERM, as container runtimes' default policies refuse what
 * they do not know.
 *
 *   refuse WHAT[,WHAT...] PROGRAM [ARG...]
 *
 * WHAT:
 *   unshare           unshare(2), and close_range(2) with CLOSE_RANGE_UNSHARE
 *                     (policies before 2021 refuse unshare and do not know
 *                     close_range): the tracer's flusher has no helper thread
 *                     with a table of its own and does its file work in the
 *                     program's table (preload/private_files.h).
 *                     close_range without that flag still works (the
 *                     programs under test close their descriptors with it).
 *   process_vm_readv  process_vm_readv(2) (some policies allow it only with
 *                     CAP_SYS_PTRACE): the tracer asks rt_sigprocmask
 *                     whether memory is readable instead
 *                     (preload/readable_run.h).
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
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#endif

/* No system call has this number: a check not asked for never matches. */
#define NONE 0xffffffffu

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: refuse unshare|process_vm_readv[,...] PROGRAM [ARG...]\n");
        return 2;
    }
#ifdef THIS_ARCH
    unsigned unshare_nr = NONE, close_range_nr = NONE, vm_readv_nr = NONE;
    char what[256];
    snprintf(what, sizeof what, "%s", argv[1]);
    for (char *save, *w = strtok_r(what, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (strcmp(w, "unshare") == 0) {
            unshare_nr = SYS_unshare;
            close_range_nr = SYS_close_range;
        } else if (strcmp(w, "process_vm_readv") == 0) {
            vm_readv_nr = SYS_process_vm_readv;
        } else {
            fprintf(stderr, "refuse: unknown %s\n", w);
            return 2;
        }
    }
    struct sock_filter code[] = {
        /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
        /* 2 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, unshare_nr, 5, 0),
        /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, vm_readv_nr, 4, 0),
        /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, close_range_nr, 0, 2),
        /* 7: the flags' low word (little-endian) */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        /* 8 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLOSE_RANGE_UNSHARE, 1, 0),
        /* 9 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 10 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog prog = { .len = sizeof code / sizeof code[0], .filter = code };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("refuse: seccomp");
        return 77;
    }
    execvp(argv[2], argv + 2);
    perror("refuse: exec");
    return 127;
#else
    fprintf(stderr, "refuse: no filter for this architecture\n");
    return 77;
#endif
}
