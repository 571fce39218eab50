/*
 * real_fns.h - the definitions our interposed libc functions hide.
 *
 * Looked up once at start, not on first use: the first call can come from
 * a signal handler on the app's small alternate stack, and dlsym runs the
 * loader's symbol lookup (a KiB or more of stack, and the loader's lock).
 * A call that comes before our constructor looks its function up then.
 */
#ifndef TRACE_REAL_FNS_H
#define TRACE_REAL_FNS_H

#define REAL_FNS(X)                                                              \
    X(read) X(write) X(close)                                                    \
    X(_exit) X(execve) X(execv) X(execvp) X(execvpe) X(fexecve) X(execveat)      \
    X(sigaction) X(pthread_sigmask) X(sigprocmask) X(prctl) X(pthread_setname_np)

enum real_fn {
#define REAL_ENUM(name) REAL_##name,
    REAL_FNS(REAL_ENUM)
#undef REAL_ENUM
    REAL_FN_COUNT
};

void real_fns_init(void);

/* The next definition after libtrace.so, or NULL. */
void *real_fn(enum real_fn f);

/* REAL(close, int (*)(int)) is that function, typed. */
#define REAL(name, type) ((__typeof__(type))real_fn(REAL_##name))

#endif
