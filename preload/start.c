/*
 * start.c - libtrace.so's constructor and destructor: settings, the log
 * header, the recorder, modules, the endings (endings.h), fork, the Python
 * side.
 */
#include "config.h"
#include "ending_signals.h"
#include "endings.h"
#include "hook_stack.h"
#include "event_clock.h"
#include "flusher.h"
#include "fork_gate.h"
#include "host_blocks.h"
#include "log_file.h"
#include "modules.h"
#include "native_stack.h"
#include "thread_mem.h"
#include "thread_stack.h"
#include "pool_api.h"
#include "python.h"
#include "real_fns.h"
#include "recorder.h"
#include "dl_hooks.h"
#include "recorder_core.h"
#include "warn.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

static char hostname[256];
static char cmdline[4096];
static char python_version[32];
static int started;

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* /proc/self/cmdline, arguments joined by single spaces. */
static void read_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, cmdline, sizeof cmdline - 1) : 0;
    if (fd >= 0)
        close(fd);
    if (n < 0)
        n = 0;
    while (n > 0 && cmdline[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (cmdline[i] == '\0')
            cmdline[i] = ' ';
    cmdline[n] = '\0';
}

static void read_process_facts(void)
{
    if (gethostname(hostname, sizeof hostname - 1) != 0)
        hostname[0] = '\0';
    read_cmdline();
}

/* The interpreter's version ("3.12.1"), when the process has one from the
 * start (a python executable, linked to libpython or with it built in), for
 * the header: readers then need not wait for the INFO record the Python side
 * writes when it attaches.  Py_GetVersion only formats constants into a
 * static buffer, so it may be asked before the interpreter starts.  Empty
 * for an embedder that loads libpython later, and with TRACE_PYTHON=0. */
static void read_python_version(void)
{
    const char *(*get_version)(void) = NULL;
    if (!trace_config_get()->python)
        return;
    *(void **)&get_version = dlsym(RTLD_DEFAULT, "Py_GetVersion");
    const char *v = get_version ? get_version() : NULL;
    size_t n = 0;
    while (v && n < sizeof python_version - 1 && ((v[n] >= '0' && v[n] <= '9') || v[n] == '.' ||
                                                  (v[n] >= 'a' && v[n] <= 'z') || v[n] == '+'))
        n++;
    if (n && v[0] >= '0' && v[0] <= '9') {
        memcpy(python_version, v, n);
        python_version[n] = '\0';
    }
}

static tf_header make_header(pid_t ppid)
{
    return (tf_header){
        .version_major = TF_VERSION_MAJOR,
        .version_minor = TF_VERSION_MINOR,
        .pid = (uint32_t)getpid(),
        .ppid = (uint32_t)ppid,
        .wall_start_ns = clock_ns(CLOCK_REALTIME),
        .mono_start_ns = rec_clock_ns(),
        .hostname = hostname,
        .cmdline = cmdline,
        .exe = modules_exe_path(),
        .tracer_version = TRACE_VERSION,
        .settings = trace_config_describe(),
        .python_version = python_version,
        .max_bytes = trace_config_get()->max_bytes,
    };
}

/* Which rank of a distributed job this is (also %r in TRACE_OUTPUT). */
static void note_rank(void)
{
    const trace_config *c = trace_config_get();
    if (c->rank_from)
        rec_info("rank", c->rank);
}

/* The process that forks, noted before the fork: a forked child's parent.
 * getppid() in the child is not that once the parent has ended (a daemon's
 * double fork: the middle process _exits at once, gunicorn --daemon), and
 * the child's atfork handler may run after that: it then named pid 1 or a
 * subreaper, and `trace-replay report` put the child at the root of the
 * tree, not under the process that forked it. */
static pid_t forking_pid;

static void fork_prepare(void)
{
    forking_pid = getpid();
    /* CPython 3.12+ warns in os.fork() when the process has more than one
     * OS thread, so the flusher must not live across fork.  It stops here,
     * what is pending is written now (a parent idle after fork would keep it
     * in memory), and the first event after the fork starts the thread
     * again (none can start one before: flusher_hold).  Both happen
     * before rec_fork_prepare takes the recorder's lock, which sealing needs.
     * A process with no events yet writes nothing: a shell that forks and
     * execs the real program under the same pid must not take its log name. */
    fork_gate_close();
    flusher_hold();
    if (rec_event_count() > 0)
        flush_now(0);
    rec_fork_prepare();
}

static void fork_parent(void)
{
    rec_fork_parent();
    flusher_release();
    fork_gate_open();
}

/* The child writes its own log, under its own pid, from scratch. */
static void fork_child(void)
{
    fork_gate_child();
    endings_fork_child();
    hook_stack_fork_child();
    ending_signals_fork_child();
    trace_config_set_pid(getpid());
    tf_header h = make_header(forking_pid);
    rec_fork_child(&h);
    /* Readers take the child's first event as coming after a gap (FORMAT.md,
     * INFO keys): a block the parent allocated may be freed here, and a
     * pool's state is the parent's, which this log does not hold. */
    char from[96];
    snprintf(from, sizeof from, "from pid %d: what it allocated before the fork is not in this log",
             (int)forking_pid);
    rec_info("forked", from);
    trace_warnings_to_log();
    host_fork_child();
    log_fork_child();
    flusher_fork_child();
    modules_fork_child();
    pool_api_fork_child();
    note_rank();
}

/* Another libtrace.so loaded before this one (a pip-installed copy and a
 * build tree's in one LD_PRELOAD): its definitions win every lookup, and
 * ours are reached only through its RTLD_NEXT.  Two recorders then called
 * each other for ever (each copy's PyObject_Init took the other's for the
 * real one: numpy's import spun at 100 % CPU).  This copy starts nothing and
 * its hooks only forward.  The first copy's file name, or NULL. */
static const char *another_copy_first(const char **mine)
{
    Dl_info self, first;
    void *f = dl_real_dlsym(RTLD_DEFAULT, "trace_pool_register");
    if (!f || !dladdr((void *)another_copy_first, &self) || !dladdr(f, &first) ||
        first.dli_fbase == self.dli_fbase)
        return NULL;
    *mine = self.dli_fname;
    return first.dli_fname ? first.dli_fname : "?";
}

static void start(void);

/* The program's first dlerror() must say nothing (as untraced): the names
 * the start-up looks for and does not find (Python's, CUDA's, the
 * allocators') each leave a dlerror() text behind on this thread. */
__attribute__((constructor)) static void trace_start(void)
{
    start();
    (void)dlerror();
}

static void start(void)
{
    real_fns_init();
    trace_config_load();
    trace_voice_init();   /* before any line: what stderr is, the parent's terminal */
    if (getauxval(AT_SECURE)) {
        trace_warn("secure-execution (setuid/setgid/capabilities) process: not tracing");
        return;
    }
    const char *mine = NULL, *first = another_copy_first(&mine);
    if (first) {
        trace_warn("%s is loaded before this copy (%s): this one does nothing", first, mine ? mine : "?");
        return;
    }
    event_clock_init(trace_config_get()->clock_counter);
    flusher_init();
    log_configure();
    endings_init();
    thread_mem_init();
    /* The main thread's mapping now, not at its first event: it holds the
     * alternate signal stack a stack overflow needs for the log to end
     * whole (alt_stack.h), in a program whose main thread records little. */
    (void)thread_mem_get();
    thread_stack_init();
    native_stack_init();
    hook_stack_init();
    read_process_facts();
    read_python_version();
    tf_header h = make_header(getppid());
    if (rec_start(&h) < 0) {
        trace_warn("out of memory at start: not tracing");
        return;
    }
    started = 1;
    trace_warnings_to_log();   /* the settings that did not parse */
    note_rank();
    native_stack_note();
    host_start();
    modules_rescan();
    ending_signals_install();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    python_start();
}

/* exit() and a return from main.  (A process that recorded nothing, such
 * as a shell on the way to the real program, leaves no log.) */
__attribute__((destructor)) static void trace_finish(void)
{
    if (started)
        ending_exit();
}
