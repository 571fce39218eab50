/*
 * exit_exec.c - _exit and exec, interposed: neither runs a destructor, and
 * both end the image (endings.h).
 *
 * glibc's own calls (posix_spawn's child, execvp's search, system())
 * reach the real functions directly, and need not come here: posix_spawn
 * does not end the calling process.  A vfork child shares our memory and
 * must not touch the recorder: endings.c tells it by its pid.
 */
#include "real_fns.h"
#include "endings.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef void (*exit_fn)(int);
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

/* ------------------------------------------------------------------ _exit */

static _Noreturn void exit_now(int status)
{
    exit_fn next = REAL(_exit, exit_fn);
    if (next)
        next(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

void _exit(int status)
{
    ending__exit(status);
    exit_now(status);
}

void _Exit(int status)
{
    ending__exit(status);
    exit_now(status);
}

/* ------------------------------------------------------------------- exec */

/* An exec of a path that names nothing fails (ENOENT, ENOTDIR) whatever
 * else: no END is written for it, nor taken back.  Before, each such
 * attempt wrote END's frame and truncated it off the log again, under the
 * recorder's lock (a program that searches PATH itself, as Python's
 * os.execvp does, fails once for each entry before the one that exists).
 * Any other answer (the file is there, or it cannot be told) gets the
 * whole exec ending.  The file appearing between the look and the call
 * would leave the log without END: a window of one system call. */
__attribute__((noinline)) static int names_nothing(const char *path)
{
    if (!path)
        return 0;
    int saved = errno;
    int gone = syscall(SYS_faccessat, AT_FDCWD, path, F_OK) != 0 && (errno == ENOENT || errno == ENOTDIR);
    errno = saved;
    return gone;
}

/* One exec attempt: END before, taken back if the call returns. */
#define EXEC_ATTEMPT_IF(path, may_succeed, call)       \
    do {                                               \
        int held_ = (may_succeed) && ending_exec_begin(path); \
        int rc_ = (call);                              \
        int errno_ = errno;                            \
        if (held_)                                     \
            ending_exec_failed();                      \
        errno = errno_;                                \
        return rc_;                                    \
    } while (0)
#define EXEC_ATTEMPT(path, call) EXEC_ATTEMPT_IF(path, 1, call)
/* A path, not a name looked up in PATH: checked first. */
#define EXEC_PATH_ATTEMPT(path, call) EXEC_ATTEMPT_IF(path, !names_nothing(path), call)
/* execvp's file: a path when it holds a slash (else PATH is searched). */
__attribute__((noinline)) static int file_names_nothing(const char *file)
{
    return file && strchr(file, '/') && names_nothing(file);
}
#define EXEC_FILE_ATTEMPT(file, call) EXEC_ATTEMPT_IF(file, !file_names_nothing(file), call)


static int no_real(void)
{
    errno = ENOSYS;
    return -1;
}

int execve(const char *path, char *const argv[], char *const envp[])
{
    execve_fn next = REAL(execve, execve_fn);
    EXEC_PATH_ATTEMPT(path, next ? next(path, argv, envp) : no_real());
}

int execv(const char *path, char *const argv[])
{
    execv_fn next = REAL(execv, execv_fn);
    EXEC_PATH_ATTEMPT(path, next ? next(path, argv) : no_real());
}

int execvp(const char *file, char *const argv[])
{
    execv_fn next = REAL(execvp, execv_fn);
    EXEC_FILE_ATTEMPT(file, next ? next(file, argv) : no_real());
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
    execve_fn next = REAL(execvpe, execve_fn);
    EXEC_FILE_ATTEMPT(file, next ? next(file, argv, envp) : no_real());
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
    fexecve_fn next = REAL(fexecve, fexecve_fn);
    EXEC_ATTEMPT("(fexecve)", next ? next(fd, argv, envp) : no_real());
}

int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    execveat_fn next = REAL(execveat, execveat_fn);
    EXEC_ATTEMPT(path, next ? next(dirfd, path, argv, envp, flags)
                            : (int)syscall(SYS_execveat, dirfd, path, argv, envp, flags));
}

/* execl, execle, execlp: glibc's build the array and call execve/execvp
 * inside libc, past us; so do it here. */
#define ARGV_FROM_VA(arg0, ap, argv, envp_out)                       \
    size_t n_ = 1;                                                    \
    va_start(ap, arg0);                                               \
    while (va_arg(ap, const char *))                                  \
        n_++;                                                         \
    va_end(ap);                                                       \
    char *argv[n_ + 1];                                               \
    argv[0] = (char *)(arg0);                                         \
    va_start(ap, arg0);                                               \
    for (size_t i_ = 1; i_ <= n_; i_++)                               \
        argv[i_] = va_arg(ap, char *);                                \
    envp_out;                                                         \
    va_end(ap)

int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGV_FROM_VA(arg, ap, argv, (void)0);
    extern char **environ;
    return execve(path, argv, environ);
}

int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    ARGV_FROM_VA(arg, ap, argv, (void)0);
    return execvp(file, argv);
}

int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    char *const *envp;
    ARGV_FROM_VA(arg, ap, argv, envp = va_arg(ap, char *const *));
    return execve(path, argv, envp);
}
