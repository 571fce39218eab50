/*
 * prog_endings.c - a process that allocates, then ends one particular way.
 * Each mode prints "pairs N" for the cudaMalloc/cudaFree pairs it made (a
 * child prints "child PID pairs N") and what else the driver checks.
 *
 *   fork_exit N        a child makes N pairs and _exit(0)s; the parent waits
 *   fork_free          the parent allocates and forks; the child frees the
 *                      block it inherited, makes a pair, _exit(0)s
 *   exec ARG0          3 pairs, then execv of itself in mode "after_exec"
 *   after_exec         2 pairs, exit 5
 *   exec_fail          2 pairs, an exec that fails (ENOENT), 2 more pairs
 *   exit               2 pairs, then return from main (exit 0)
 *   fsize              files limited to 256 bytes (RLIMIT_FSIZE, SIGXFSZ at
 *                      its default action), 2 pairs, _exit(0)
 *   signal NAME [handler]  2 pairs, then raise(NAME) under the default action
 *                      (handler: the app's own handler, which prints and
 *                      restores the default before raising again)
 *   wait               2 pairs, print "ready", sleep until killed
 *   altstack BUDGET default|handler [MIN]
 *                      an alternate signal stack of MIN (default: the
 *                      kernel's advertised minimum, AT_MINSIGSTKSZ) + BUDGET
 *                      bytes, with a guard page below it; default: SIGTERM
 *                      with the default action (our handler runs on that
 *                      stack); handler: the app's SIGSEGV handler on it calls
 *                      _exit(7) after a real fault
 *   altstack_minimum   print "advertised A delivers D": A is AT_MINSIGSTKSZ,
 *                      D the smallest alternate stack (to 64 bytes) on which
 *                      a handler like the app's (a write, then exit) runs;
 *                      run it without the preload
 *   recover N          the app's SIGSEGV handler recovers from N faults
 *   crash_empty        no event at all, then abort()
 *   closerange HOW     2 pairs; close every descriptor from 3 up (HOW:
 *                      close_range, closefrom, loop, syscall), open
 *                      files that take the freed numbers, 2 more pairs;
 *                      print "files" and each file's first bytes
 *   dup2               2 pairs; dup2 onto every high descriptor; 2 pairs
 *   fill_all [_exit]   2 pairs; open /dev/null until no descriptor is
 *                      left (the soft limit), 2 pairs, exit (or _exit)
 *                      with them all taken; print "filled N"
 *   exec_fail_full     2 pairs; open /dev/null until no descriptor is left;
 *                      2 pairs, a pause (the flusher's turn), 2 pairs, an
 *                      exec that fails (EACCES: "/"); close the files, 2 pairs,
 *                      exit; print "filled N"
 *   exec_full ARG0     2 pairs; open /dev/null (close-on-exec) until no
 *                      descriptor is left; 2 pairs, then execv of itself
 *                      in mode "after_exec"; print "filled N"
 *   first_fd           print the first descriptor open() returns
 *   fd_race MS         a thread makes pairs for MS milliseconds while the
 *                      main thread, over and over, closes every descriptor
 *                      from 3 up, opens a file of its own (its number must
 *                      be 3), and checks that the number still holds that
 *                      file and that nothing was written into it; prints
 *                      "rounds R moved M lost L written W" (the rounds
 *                      whose number was not 3, whose file was closed or
 *                      replaced under it, and that found bytes in it)
 *   thread_exit        2 pairs, a thread that makes 3 more, and main()
 *                      ends with pthread_exit: the process ends (exit 0)
 *                      when that thread returns
 *   fork_in_thread     a thread forks; the child, in that thread, makes 2
 *                      pairs and returns from it (the last thread of the
 *                      child: exit 0); the parent prints "child PID" and
 *                      "status S" of the child
 *   exec_race PATH     2 pairs; a thread makes exec after exec of PATH,
 *                      each of which fails, while main() returns 3 (exit)
 *                      after the first has failed, a few microseconds
 *                      later or sooner from run to run
 *   init exec|fork|fault  the init of a new pid namespace (pid 1; a user
 *                      namespace too, for the right): the child of an
 *                      unshare, exec'd (exec, fault) or only forked (fork,
 *                      where the handlers in place are the parent's) makes
 *                      2 pairs, is sent SIGTERM, SIGINT, SIGHUP, SIGUSR1,
 *                      SIGPIPE, SIGALRM and SIGSEGV under their default
 *                      action by kill() (by itself, then SIGTERM by a child
 *                      of its own), which the kernel drops, then 2 pairs
 *                      more and exit 0 (fault: a real fault, which kills
 *                      init); the parent prints "init exit N" or "init
 *                      killed by N"; exit 77 where no namespace can be made
 *   blocked_fault HOW  2 pairs; a thread makes pairs without end while
 *                      another blocks every signal (HOW: pthread_sigmask or
 *                      sigprocmask), as faulthandler's watchdog does,
 *                      prints "reads back blocked N" (how many of SIGSEGV,
 *                      SIGBUS, SIGILL, SIGFPE it reads back blocked) and
 *                      faults
 *   vfork_mask         2 pairs; block every signal (pthread_sigmask), vfork
 *                      a child that unblocks every signal (sigprocmask)
 *                      and _exits; print "reads back blocked N" as above
 *   stack_use          2 pairs; a SIGUSR1 handler on a pattern-filled
 *                      alternate stack makes an exec that fails (which
 *                      goes through the tracer's exec ending and comes
 *                      back), then prints how many bytes of the alternate
 *                      stack were touched
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int pairs;

static void make_pairs(int n)
{
    for (int i = 0; i < n; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, 256 + (size_t)i) == cudaSuccess && cudaFree(p) == cudaSuccess)
            pairs++;
    }
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static int signal_named(const char *name)
{
    static const struct { const char *name; int sig; } names[] = {
        { "SIGINT", SIGINT }, { "SIGTERM", SIGTERM }, { "SIGHUP", SIGHUP }, { "SIGPIPE", SIGPIPE },
        { "SIGUSR1", SIGUSR1 }, { "SIGQUIT", SIGQUIT }, { "SIGSEGV", SIGSEGV },
        { "SIGABRT", SIGABRT }, { "SIGALRM", SIGALRM },
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(names[i].name, name))
            return names[i].sig;
    return 0;
}

/* ----------------------------------------------------------- the modes */

static int fork_exit(int n)
{
    pid_t child = fork();
    if (child == 0) {
        make_pairs(n);
        say("child %d pairs %d\n", (int)getpid(), pairs);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    make_pairs(1);
    say("pairs %d\n", pairs);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* The parent allocates, forks; the child frees the block it inherited (its
 * copy of the parent's memory: legal) and _exits; the parent frees its own. */
static int fork_free(void)
{
    void *block = NULL;
    if (cudaMalloc(&block, 4096) != cudaSuccess)
        return 1;
    pid_t child = fork();
    if (child == 0) {
        cudaFree(block);
        make_pairs(1);
        say("child %d pairs %d\n", (int)getpid(), pairs);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    cudaFree(block);
    say("pairs %d\n", pairs);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static int exec_self(const char *self)
{
    make_pairs(3);
    say("pairs %d\n", pairs);
    char *argv[] = { (char *)self, "after_exec", NULL };
    execv("/proc/self/exe", argv);
    say("exec failed: %s\n", strerror(errno));
    return 1;
}

static int exec_fail(void)
{
    make_pairs(2);
    char *argv[] = { "nothing", NULL };
    int rc = execv("/nonexistent/program", argv);
    say("exec returned %d errno %d\n", rc, errno);
    make_pairs(2);
    say("pairs %d\n", pairs);
    return 0;
}

static void print_and_reraise(int sig)
{
    static const char msg[] = "app handler ran\n";
    ssize_t ignored = write(STDOUT_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
}

static int die_of(const char *name, int own_handler)
{
    int sig = signal_named(name);
    if (!sig)
        return 2;
    if (own_handler) {
        struct sigaction sa = { .sa_handler = print_and_reraise }, back;
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, NULL);
        sigaction(sig, NULL, &back);
        say("reads back own handler: %d\n", back.sa_handler == print_and_reraise);
    } else {
        struct sigaction dfl = { .sa_handler = SIG_DFL }, back;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);   /* a background shell starts us with SIGINT ignored */
        sigaction(sig, NULL, &back);
        say("reads back default: %d\n", back.sa_handler == SIG_DFL);
    }
    make_pairs(2);
    say("pairs %d\n", pairs);
    raise(sig);
    say("still alive\n");
    return 1;
}

static _Noreturn void wait_for_signal(void)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    make_pairs(2);
    say("pairs %d\nready\n", pairs);
    for (;;)
        pause();
}

/* A store to a page with no access: a real fault. */
static void fault(void)
{
    volatile int *forbidden = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *forbidden = 1;
}

static void exit_from_handler(int sig)
{
    (void)sig;
    static const char msg[] = "app handler ran\n";
    ssize_t ignored = write(STDOUT_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(7);
}

static long advertised_minimum(void)
{
    long min = (long)getauxval(AT_MINSIGSTKSZ);
    return min > 0 ? min : MINSIGSTKSZ;
}

/* An alternate stack of exactly size bytes with a guard page right below
 * it: a handler that needs more faults at once, instead of writing over
 * whatever lies below (a malloc'ed stack overflows into the heap, and the
 * run then passes or fails by luck). */
static int guarded_altstack(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t mapped = (size + page - 1) / page * page + page;
    char *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || mprotect(p, page, PROT_NONE) != 0)
        return -1;
    stack_t ss = { .ss_sp = p + mapped - size, .ss_size = size };
    return sigaltstack(&ss, NULL);
}

/* What exit_from_handler does, without its output. */
static void exit_at_once(int sig)
{
    (void)sig;
    static const char msg[] = "app handler ran\n";
    ssize_t ignored = write(-1, msg, sizeof msg - 1);
    (void)ignored;
    syscall(SYS_exit_group, 0);
}

/* The kernel should deliver a signal on an alternate stack of
 * AT_MINSIGSTKSZ bytes, but some ask for more than they advertise (Linux
 * 6.18 in an AMD EPYC guest: 3376 advertised, about 4130 needed, of which
 * it writes 2960): there an app that sizes its stack by the advertised
 * minimum crashes with or without us.  Each size is tried in a child. */
static int altstack_minimum(void)
{
    long advertised = advertised_minimum();
    for (long size = advertised; size <= advertised + 65536; size += 64) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return 2;
        if (pid == 0) {
            struct sigaction sa = { .sa_handler = exit_at_once, .sa_flags = SA_ONSTACK };
            sigemptyset(&sa.sa_mask);
            if (guarded_altstack((size_t)size) != 0 || sigaction(SIGUSR2, &sa, NULL) != 0)
                syscall(SYS_exit_group, 2);
            raise(SIGUSR2);
            syscall(SYS_exit_group, 3);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid)
            return 2;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
            return 2;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            say("advertised %ld delivers %ld\n", advertised, size);
            return 0;
        }
    }
    return 1;
}

static int small_altstack(long budget, const char *how, long min)
{
    if (min <= 0)
        min = advertised_minimum();
    size_t size = (size_t)(min + budget);
    if (guarded_altstack(size) != 0)
        return 2;
    say("altstack %zu bytes (kernel minimum %ld + %ld)\n", size, min, budget);
    make_pairs(2);
    say("pairs %d\n", pairs);
    if (!strcmp(how, "handler")) {
        struct sigaction sa = { .sa_handler = exit_from_handler, .sa_flags = SA_ONSTACK };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, NULL);
        fault();
    } else {
        signal(SIGTERM, SIG_DFL);
        raise(SIGTERM);
    }
    say("still alive\n");
    return 1;
}

static void *pairs_forever(void *arg)
{
    (void)arg;
    for (;;) {
        void *p = NULL;
        if (cudaMalloc(&p, 512) == cudaSuccess)
            cudaFree(p);
    }
    return NULL;
}

static void *block_all_and_fault(void *arg)
{
    const char *how = arg;
    sigset_t all, back;
    sigfillset(&all);
    sigemptyset(&back);
    if (!strcmp(how, "sigprocmask")) {
        sigprocmask(SIG_SETMASK, &all, NULL);
        sigprocmask(SIG_BLOCK, NULL, &back);
    } else {
        pthread_sigmask(SIG_SETMASK, &all, NULL);
        pthread_sigmask(SIG_BLOCK, NULL, &back);
    }
    say("reads back blocked %d\n", sigismember(&back, SIGSEGV) + sigismember(&back, SIGBUS) +
                                       sigismember(&back, SIGILL) + sigismember(&back, SIGFPE));
    struct timespec pause = { 0, 2 * 1000 * 1000 };   /* the other thread under way */
    nanosleep(&pause, NULL);
    fault();
    return NULL;
}

static int blocked_fault(const char *how)
{
    make_pairs(2);
    pthread_t busy, faulter;
    if (pthread_create(&busy, NULL, pairs_forever, NULL) != 0 ||
        pthread_create(&faulter, NULL, block_all_and_fault, (void *)how) != 0)
        return 1;
    pthread_join(faulter, NULL);
    say("survived\n");
    return 1;
}

/* A vfork child shares the parent's memory: its mask calls must not
 * change what the parent's thread reads back. */
static int vfork_mask(void)
{
    make_pairs(2);
    sigset_t all, none, back;
    sigfillset(&all);
    sigemptyset(&none);
    sigemptyset(&back);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    pid_t child = vfork();
    if (child == 0) {
        sigprocmask(SIG_SETMASK, &none, NULL);
        _exit(0);
    }
    if (child < 0 || waitpid(child, NULL, 0) != child)
        return 1;
    pthread_sigmask(SIG_BLOCK, NULL, &back);
    say("reads back blocked %d\n", sigismember(&back, SIGSEGV) + sigismember(&back, SIGBUS) +
                                       sigismember(&back, SIGILL) + sigismember(&back, SIGFPE));
    return 0;
}

static sigjmp_buf recovery;
static volatile sig_atomic_t handled;

static void recover_handler(int sig)
{
    (void)sig;
    handled++;
    siglongjmp(recovery, 1);
}

static int recover(int n)
{
    struct sigaction sa = { .sa_handler = recover_handler, .sa_flags = SA_NODEFER };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    make_pairs(1);
    for (int i = 0; i < n; i++)
        if (sigsetjmp(recovery, 1) == 0)
            fault();
    make_pairs(1);
    say("handled %d\npairs %d\n", (int)handled, pairs);
    return 0;
}

static int open_files(int n, int *fds)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "app-file-%d", i);
        fds[i] = open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fds[i] < 0)
            return -1;
    }
    return 0;
}

/* After closing everything, the app fills every free number up to its
 * limit with files of its own: whatever the tracer writes must go to its
 * log, never into these. */
static int closerange(const char *how)
{
    make_pairs(2);
    usleep(300 * 1000);   /* the flusher has written a frame: the log is open */
    if (!strcmp(how, "close_range"))
        close_range(3, ~0u, 0);
    else if (!strcmp(how, "closefrom"))
        closefrom(3);
    else if (!strcmp(how, "syscall"))
        syscall(SYS_close_range, 3, ~0u, 0);
    else
        for (int fd = 3; fd < 4096; fd++)
            close(fd);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    int want = (int)(rl.rlim_cur < 2048 ? rl.rlim_cur : 2048) - 8;
    int *fds = calloc((size_t)want, sizeof *fds);
    int opened = 0;
    while (opened < want) {
        char name[64];
        snprintf(name, sizeof name, "app-file-%d", opened);
        int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            break;
        fds[opened++] = fd;
    }
    make_pairs(2);
    say("opened %d files, first fd %d\npairs %d\n", opened, opened ? fds[0] : -1, pairs);
    return 0;
}

/* A program that ends with every descriptor taken (a server leaking
 * sockets up to its limit): the tracer's last frames need one. */
static int fill_all(const char *how)
{
    make_pairs(2);
    usleep(300 * 1000);   /* the flusher has written a frame */
    int filled = 0;
    while (open("/dev/null", O_RDONLY) >= 0)
        filled++;
    make_pairs(2);
    say("filled %d\npairs %d\n", filled, pairs);
    if (!strcmp(how, "_exit"))
        _exit(0);
    return 0;
}

/* Every descriptor up to the soft limit taken, close-on-exec. */
static int fill_table(int *fds, int cap)
{
    int filled = 0;
    while (filled < cap && (fds[filled] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
        filled++;
    return filled;
}

/* An exec tried with every descriptor taken.  Pairs made before the pause
 * are the flusher's (written through its helper's table, or waiting for a
 * descriptor where it has none); those made after it are still in the
 * writer when the exec comes. */
static int exec_fail_full(void)
{
    make_pairs(2);
    usleep(300 * 1000);   /* the flusher has written a frame */
    int fds[4096];
    int filled = fill_table(fds, 4096);
    make_pairs(2);
    usleep(300 * 1000);
    make_pairs(2);
    char *argv[] = { "nothing", NULL };
    int rc = execv("/", argv);   /* EACCES after the whole exec ending (exec_in_handler) */
    int err = errno;
    for (int i = 0; i < filled; i++)
        close(fds[i]);
    make_pairs(2);
    say("exec returned %d errno %d\nfilled %d\npairs %d\n", rc, err, filled, pairs);
    return 0;
}

/* The new image gets the descriptors back (close-on-exec): only the old
 * one's ending lacks them. */
static int exec_full(const char *self)
{
    make_pairs(2);
    usleep(300 * 1000);   /* the flusher has written a frame */
    int fds[4096];
    int filled = fill_table(fds, 4096);
    make_pairs(2);
    say("filled %d\npairs %d\n", filled, pairs);
    char *argv[] = { (char *)self, "after_exec", NULL };
    execv("/proc/self/exe", argv);
    say("exec failed: %s\n", strerror(errno));
    return 1;
}

static int dup2_over(void)
{
    make_pairs(2);
    usleep(300 * 1000);
    int fds[1];
    if (open_files(1, fds) < 0)
        return 2;
    for (int fd = 3; fd < 1024; fd++)
        if (fd != fds[0] && fcntl(fd, F_GETFD) >= 0)
            dup2(fds[0], fd);
    make_pairs(2);
    say("pairs %d\n", pairs);
    return 0;
}

#define PROBE_STACK (64 * 1024)
static unsigned char *probe_stack;

/* A directory: the exec fails (EACCES) after the tracer's whole exec
 * ending (a path that names nothing is told apart before, exit_exec.c). */
static void exec_in_handler(int sig)
{
    (void)sig;
    char *argv[] = { "nothing", NULL };
    execv("/", argv);
}

static int stack_use(void)
{
    probe_stack = malloc(PROBE_STACK);
    memset(probe_stack, 0xa5, PROBE_STACK);
    stack_t ss = { .ss_sp = probe_stack, .ss_size = PROBE_STACK };
    struct sigaction sa = { .sa_handler = exec_in_handler, .sa_flags = SA_ONSTACK };
    sigemptyset(&sa.sa_mask);
    if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0)
        return 2;
    make_pairs(2);
    exec_in_handler(0);   /* binds execv first: a lazy binding takes KiB */
    raise(SIGUSR1);
    size_t untouched = 0;
    while (untouched < PROBE_STACK && probe_stack[untouched] == 0xa5)
        untouched++;
    make_pairs(2);
    say("altstack used %zu\npairs %d\n", PROBE_STACK - untouched, pairs);
    return 0;
}

static int first_fd(void)
{
    make_pairs(1);
    int fd = open("/dev/null", O_RDONLY);
    say("first fd %d\n", fd);
    return 0;
}

static _Atomic int racing = 1, pairing;

/* Its first pair before the race, which is about the flusher's
 * descriptors (a thread's first capture, which took one of its own to read
 * /proc/self/maps before readable_run.h, has its own test:
 * cuda.stack_memo_thread). */
static void *pairs_while_racing(void *arg)
{
    (void)arg;
    make_pairs(1);
    pairing = 1;
    while (racing) {
        make_pairs(8);   /* something for every flush (TRACE_FLUSH_MS=1) */
        usleep(500);
    }
    return NULL;
}

/* The flusher writes a frame every TRACE_FLUSH_MS while the app, over and
 * over, closes every descriptor from 3 up and opens its own file: the
 * tracer's descriptors must never take the app's number, be closed by it
 * and leave the app's file in their place to be written into and closed. */
static int fd_race(long ms)
{
    make_pairs(1);   /* the runtime's dlopen of the driver is done before the race */
    pthread_t t;
    if (pthread_create(&t, NULL, pairs_while_racing, NULL) != 0)
        return 1;
    while (!pairing)
        usleep(1000);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long rounds = 0, moved = 0, lost = 0, written = 0;
    for (;; rounds++) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - start.tv_sec) * 1000L + (now.tv_nsec - start.tv_nsec) / 1000000L >= ms)
            break;
        syscall(SYS_close_range, 3, ~0u, 0);
        int fd = open("app-file-race", O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            return 3;
        if (fd != 3)
            moved++;
        struct stat mine, later;
        fstat(fd, &mine);
        for (volatile int spin = 0; spin < 2000; spin++)
            ;
        if (fstat(fd, &later) != 0 || later.st_ino != mine.st_ino || later.st_dev != mine.st_dev)
            lost++;
        else if (later.st_size != 0)
            written++;
    }
    racing = 0;
    pthread_join(t, NULL);
    say("rounds %ld moved %ld lost %ld written %ld\npairs %d\n", rounds, moved, lost, written, pairs);
    return 0;
}

static void *three_pairs(void *arg)
{
    (void)arg;
    make_pairs(3);
    return NULL;
}

/* main() ends with pthread_exit: glibc ends the process with exit(0) when
 * the last thread ends, here the one making three pairs. */
static int thread_exit(void)
{
    make_pairs(2);
    pthread_t t;
    if (pthread_create(&t, NULL, three_pairs, NULL) != 0)
        return 1;
    pthread_exit(NULL);
}

static void *fork_here(void *arg)
{
    (void)arg;
    pid_t child = fork();
    if (child == 0) {
        make_pairs(2);
        return NULL;   /* the child's only thread: its end ends the child */
    }
    int status = -1;
    waitpid(child, &status, 0);
    say("child %d\nstatus %d\n", (int)child, status);
    return NULL;
}

static int fork_in_thread(void)
{
    make_pairs(1);
    pthread_t t;
    if (pthread_create(&t, NULL, fork_here, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    return 0;
}

static _Atomic int exec_failures;

static void *exec_over_and_over(void *arg)
{
    char *argv[] = { "nothing", NULL };
    for (;;) {
        execv((const char *)arg, argv);
        exec_failures++;
    }
    return NULL;
}

/* A failing exec in one thread while another exits: the log must end as
 * exit ends it, whichever comes first. */
static int exec_race(const char *path)
{
    make_pairs(2);
    say("pairs %d\n", pairs);
    pthread_t t;
    if (pthread_create(&t, NULL, exec_over_and_over, (void *)path) != 0)
        return 1;
    while (!exec_failures)
        sched_yield();
    for (volatile unsigned spin = (unsigned)getpid() % 64 * 40; spin; spin--)
        ;
    return 3;
}

static int as_init_body(const char *how)
{
    static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGPIPE, SIGALRM, SIGSEGV };
    make_pairs(2);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        if (strcmp(how, "fork") != 0)
            signal(sigs[i], SIG_DFL);   /* fork: the parent's dispositions, as they are */
        kill(1, sigs[i]);
    }
    pid_t sender = fork();
    if (sender == 0) {
        kill(1, SIGTERM);
        _exit(0);
    }
    if (sender > 0)
        waitpid(sender, NULL, 0);
    make_pairs(2);
    say("pairs %d\n", pairs);
    if (!strcmp(how, "fault")) {
        /* A real fault (the kernel's forced SIGSEGV); through a volatile
         * pointer, or GCC sees the constant address (-Warray-bounds). */
        volatile int *volatile bad = (volatile int *)(uintptr_t)8;
        *bad = 1;
    }
    return 0;
}

static int as_init(const char *argv0, const char *how)
{
    if (getpid() == 1)
        return as_init_body(how);
    if (unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0) {
        fprintf(stderr, "skipped: unshare(CLONE_NEWUSER|CLONE_NEWPID): %s\n", strerror(errno));
        return 77;
    }
    pid_t child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        if (!strcmp(how, "fork"))
            _exit(as_init_body(how));
        execl(argv0, argv0, "init", how, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (waitpid(child, &st, 0) != child)
        return 1;
    if (WIFSIGNALED(st))
        say("init killed by %d\n", WTERMSIG(st));
    else
        say("init exit %d\n", WEXITSTATUS(st));
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *arg = argc > 2 ? argv[2] : "";
    if (!strcmp(mode, "fork_exit"))
        return fork_exit(atoi(arg));
    if (!strcmp(mode, "fork_free"))
        return fork_free();
    if (!strcmp(mode, "exec"))
        return exec_self(argv[0]);
    if (!strcmp(mode, "after_exec")) {
        make_pairs(2);
        say("pairs %d\n", pairs);
        return 5;
    }
    if (!strcmp(mode, "exec_fail"))
        return exec_fail();
    if (!strcmp(mode, "fsize")) {
        struct rlimit small = { 256, 256 };
        setrlimit(RLIMIT_FSIZE, &small);
        make_pairs(2);
        say("pairs %d\n", pairs);
        _exit(0);
    }
    if (!strcmp(mode, "exit")) {
        make_pairs(2);
        say("pairs %d\n", pairs);
        return 0;
    }
    if (!strcmp(mode, "signal"))
        return die_of(arg, argc > 3 && !strcmp(argv[3], "handler"));
    if (!strcmp(mode, "wait"))
        wait_for_signal();
    if (!strcmp(mode, "altstack"))
        return small_altstack(atol(arg), argc > 3 ? argv[3] : "default",
                              argc > 4 ? atol(argv[4]) : 0);
    if (!strcmp(mode, "altstack_minimum"))
        return altstack_minimum();
    if (!strcmp(mode, "blocked_fault"))
        return blocked_fault(arg);
    if (!strcmp(mode, "vfork_mask"))
        return vfork_mask();
    if (!strcmp(mode, "recover"))
        return recover(atoi(arg));
    if (!strcmp(mode, "crash_empty"))
        abort();
    if (!strcmp(mode, "closerange"))
        return closerange(arg);
    if (!strcmp(mode, "dup2"))
        return dup2_over();
    if (!strcmp(mode, "fill_all"))
        return fill_all(arg);
    if (!strcmp(mode, "exec_fail_full"))
        return exec_fail_full();
    if (!strcmp(mode, "exec_full"))
        return exec_full(argv[0]);
    if (!strcmp(mode, "first_fd"))
        return first_fd();
    if (!strcmp(mode, "fd_race"))
        return fd_race(atol(arg));
    if (!strcmp(mode, "stack_use"))
        return stack_use();
    if (!strcmp(mode, "exec_race"))
        return exec_race(arg);
    if (!strcmp(mode, "thread_exit"))
        return thread_exit();
    if (!strcmp(mode, "init"))
        return as_init(argv[0], arg);
    if (!strcmp(mode, "fork_in_thread"))
        return fork_in_thread();
    fprintf(stderr, "usage: prog_endings MODE [ARG]\n");
    return 2;
}
