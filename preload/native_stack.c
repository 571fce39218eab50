/*
 * native_stack.c - the calling thread's native stack, remembered per thread.
 *
 * A full walk (libunwind, with per-thread cached unwind information) costs
 * 10 to 20 ns a frame, and the same call site in a loop records the same
 * stack again and again.  So each thread keeps a small memo of the stacks it
 * walked, each with where it found every frame: the stack pointer at which
 * the walk entered the application's code and, for every frame after the
 * first, the stack slot its return address was read from.  Unwinding is a
 * function of the registers it starts from and of the memory it reads; a
 * stack whose starting point is the same and whose return-address slots hold
 * the same values is the same stack.  Checking that is one load and compare
 * per frame, a few ns for 32 frames, against a walk of several hundred.
 *
 * Finding the starting point costs nothing either: libtrace.so is built with
 * frame pointers, so its own frames (the recorder, the hook, the exported
 * wrapper) are walked by their frame-pointer chain up to the first return
 * address outside the library: that is the application's innermost frame,
 * and the frame pointer's slot gives its stack pointer.  Frames of the
 * application itself are never walked by frame pointers: most libraries are
 * built without them, and a chain through a function that uses the register
 * for something else gives a plausible, wrong stack.
 *
 * A memo is only trusted on the thread's own stack (know_stack_bounds): a
 * program that switches stacks (coroutines) walks every time there.
 */
#include "unwind_lib.h"
#include "native_stack.h"
#include "hook_stack.h"
#include "fork_gate.h"
#include "recorder.h"
#include "thread_mem.h"
#include "thread_stack.h"
#include "unwind_pipe.h"

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Our own frames at the top of a stack: the recorder, the hook, a wrapper
 * (at most 7 today, 9 in the sanitizer build since the recorder is also
 * called aside), and on a stack of ours the switch's (hook_stack.h).
 * Walking costs per frame, so ask for no more. */
#define OWN_FRAMES_MAX 10
#define OWN_FRAMES_ASIDE (OWN_FRAMES_MAX + HOOK_STACK_ASIDE_FRAMES)

static inline int own_frames_max(void)
{
    return hook_stack_aside ? OWN_FRAMES_ASIDE : OWN_FRAMES_MAX;
}
#define MEMO_SETS 4
#define MEMO_WAYS 4
#define MEMO_FRAMES 32
/* Stacks seen again are worth a memo: counted here by their frames. */
#define HOT_SLOTS 256
#define HOT_AFTER 2
/* A memo needs each frame's stack pointer, which only libunwind's step by
 * step walk gives, at about 100 times the cost of unw_backtrace: at most
 * one such walk per SLOW_EVERY captures, so a thread that keeps meeting
 * new stacks pays a few percent more, not a hundredfold. */
#define SLOW_EVERY 1024

#define TLS static __thread __attribute__((tls_model("initial-exec")))

typedef struct memo {
    uint32_t generation;          /* the writer the id belongs to; 0: empty */
    uint32_t id;
    uint32_t used;                /* for replacement: the capture count at its last use */
    int n;
    uint64_t ip0, sp0, fp0;       /* where the application's code was entered */
    uint64_t ips[MEMO_FRAMES];
    uint64_t sps[MEMO_FRAMES];    /* sps[i] - 8 holds ips[i], for i >= 1 */
} memo;

/* A thread's memos, in its mapping (thread_mem.h: not in TLS, which
 * glibc carves out of every thread's stack). */
typedef struct thread_memos {
    memo sets[MEMO_SETS][MEMO_WAYS];
    memo walked;                  /* the last slow walk, until its id is known */
    int walked_valid;
    uint32_t captures;
    uint32_t slow_allowed_at;     /* captures count when a slow walk is allowed again */
    uint8_t hot[HOT_SLOTS];       /* times a stack hashed here was walked */
} thread_memos;

_Static_assert(sizeof(thread_memos) <= THREAD_MEM_MEMO_BYTES, "thread_mem.h: the memos' part");

static uintptr_t own_lo, own_hi;

static int find_own_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t here = (uintptr_t)arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (start < lo)
            lo = start;
        if (start + ph->p_memsz > hi)
            hi = start + ph->p_memsz;
    }
    if (here < lo || here >= hi)
        return 0;
    own_lo = lo;
    own_hi = hi;
    return 1;
}

/* libunwind would open a pipe (to validate addresses) as it sets itself
 * up: it gets one that needs no descriptor first (unwind_pipe.c). */
static int unwind_pipe_patched;
/* Our libunwind is open (unwind_lib.c): without it no stack is walked. */
static int unwind_loaded;

void native_stack_init(void)
{
    unwind_loaded = unwind_lib_load();
    if (unwind_loaded) {
        unwind_pipe_patched = unwind_pipe_install();
        unwind_lib.set_caching_policy(*unwind_lib.local_addr_space, UNW_CACHE_PER_THREAD);
    }
    dl_iterate_phdr(find_own_text, (void *)(uintptr_t)native_stack_init);
}

void native_stack_note(void)
{
    if (!unwind_loaded) {
        const char *why = unwind_lib_problem();
        rec_info("native_stacks", why ? why : "libunwind could not be opened");
        return;
    }
    if (!unwind_pipe_patched)
        rec_info("native_stacks", "libunwind's address-validation pipe is open (its imports were not found)");
}

int native_stack_is_ours(uintptr_t ip)
{
    return ip >= own_lo && ip < own_hi;
}

/* How far below a frame its thread's stack is checked (thread_stack.h):
 * deeper frames later check further down.  Every page checked costs a
 * lookup, and an untouched one of the stack gets the zero page mapped. */
#define STACK_BELOW (16 * 1024)

/* Is this frame on the thread's own stack (thread_stack.h)?  A memo is
 * trusted only there. */
static int know_stack_bounds(void)
{
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    return thread_stack_reach(here, here > STACK_BELOW ? here - STACK_BELOW : 0);
}

/* Where the application's code was entered: the first return address
 * outside libtrace.so on our frame-pointer chain, the stack pointer of that
 * frame, and its frame-pointer register as we saved it.  0 when the chain
 * leaves the thread's stack or runs longer than our own frames can. */
static __attribute__((noinline)) int entry_point(uint64_t *ip0, uint64_t *sp0, uint64_t *fp0)
{
    const uintptr_t *fp = __builtin_frame_address(0);
    for (int i = 0; i < OWN_FRAMES_MAX + 2; i++) {
        uintptr_t at = (uintptr_t)fp;
        if (at < thread_stack_lo || at + 16 > thread_stack_hi || (at & 7))
            return 0;
        uintptr_t ret = fp[1];
        if (!native_stack_is_ours(ret)) {
            *ip0 = ret;
            *sp0 = at + 16;
            *fp0 = fp[0];
            return 1;
        }
        const uintptr_t *next = (const uintptr_t *)fp[0];
        if ((uintptr_t)next <= at)
            return 0;
        fp = next;
    }
    return 0;
}

/* The set a stack entered at (ip0, sp0) lives in. */
static memo *set_of(thread_memos *t, uint64_t ip0, uint64_t sp0)
{
    uint64_t h = (ip0 ^ (sp0 >> 4)) * 0x9E3779B97F4A7C15ull;
    return t->sets[h >> 62];
}

/* Is m the stack this thread is on now?  The slots it reads are anywhere
 * between the entry point and the stack's top: in a frame that is not the
 * one the memo saw they may be a local's padding, which AddressSanitizer
 * poisons (a read of our own thread's mapped stack, harmless). */
__attribute__((no_sanitize("address")))
static int still_there(const memo *m, uint64_t ip0, uint64_t sp0, uint64_t fp0)
{
    if (!m->generation || m->ip0 != ip0 || m->sp0 != sp0 || m->fp0 != fp0)
        return 0;
    for (int i = 1; i < m->n; i++) {
        uintptr_t slot = (uintptr_t)m->sps[i] - 8;
        if (slot < sp0 || slot + 8 > thread_stack_hi || *(const uint64_t *)slot != m->ips[i])
            return 0;
    }
    return 1;
}

static thread_memos *thread_memos_get(void)
{
    thread_mem *m = thread_mem_get();
    return m ? (thread_memos *)m->stack_memos : NULL;
}

/* This thread is inside libunwind for one of our walks.  libunwind blocks
 * every signal around its lookups (dozens of times in a walk on a cold
 * cache), and while the program's main thread blocks them a signal sent to
 * the process goes to another thread: CPython handles signals on the main
 * thread alone, so its main thread, waiting in a lock, was not woken (a
 * SIGCHLD, a Ctrl-C).  So libunwind's sigprocmask leaves the mask alone
 * during our walks (unwind_pipe.c), and what the masking protected, the
 * walk's state against a walk in a signal handler on the same thread, is
 * kept here: a capture that interrupted a walk takes no native stack. */
TLS int walking;

int native_stack_walking(void)
{
    return walking;
}

/* libunwind's fast walk (its own per-frame cache), our frames cut off.
 * Not for a thread's first walks (walk_stack).  Written straight into the
 * capture, which has room for our frames too (NATIVE_STACK_SPARE): a
 * buffer of its own here was 2.2 KiB more of the program's stack at every
 * event. */
_Static_assert(OWN_FRAMES_ASIDE <= NATIVE_STACK_SPARE, "native_stack.h: room for our own frames");
_Static_assert(sizeof(void *) == sizeof(uint64_t), "unw_backtrace's frames are the capture's");
static int fast_walk(uint64_t *ips, int depth)
{
    int own_max = own_frames_max();
    fork_gate_enter();
    walking = 1;
    int n = unwind_lib.backtrace((void **)ips, depth + own_max);
    walking = 0;
    fork_gate_leave();
    int skip = 0;
    while (skip < n && skip < own_max && native_stack_is_ours((uintptr_t)ips[skip]))
        skip++;
    int kept = n - skip < depth ? n - skip : depth;
    if (skip && kept > 0)
        memmove(ips, ips + skip, (size_t)kept * sizeof *ips);
    return kept;
}

/* The step-by-step walk, which also tells each frame's stack pointer
 * (sps NULL: not wanted). */
static int step_walk(uint64_t *ips, uint64_t *sps, int depth)
{
    unw_context_t ctx;
    unw_cursor_t cur;
    if (UNWIND_GETCONTEXT(&ctx) != 0 || unwind_lib.init_local(&cur, &ctx) != 0)
        return 0;
    int n = 0, own = 0, own_max = own_frames_max();
    do {
        unw_word_t ip, sp;
        if (unwind_lib.get_reg(&cur, UNW_REG_IP, &ip) != 0 || unwind_lib.get_reg(&cur, UNW_REG_SP, &sp) != 0)
            break;
        if (n == 0 && own < own_max && native_stack_is_ours(ip)) {
            own++;
            continue;
        }
        ips[n] = ip;
        if (sps)
            sps[n] = sp;
        n++;
    } while (n < depth && unwind_lib.step(&cur) > 0);
    return n;
}

static int slow_walk(uint64_t *ips, uint64_t *sps, int depth)
{
    fork_gate_enter();
    walking = 1;
    int n = step_walk(ips, sps, depth);
    walking = 0;
    fork_gate_leave();
    return n;
}

/* A thread's first walks go step by step.  unw_backtrace's first call on a
 * thread makes libunwind's per-thread cache of frames, 256 KiB written in
 * full: 64 page faults, about 120 us, and the memory kept for the thread's
 * life.  Worth it for a thread that walks often; a thread that records an
 * event or two (a thread per task or request, a worker's GC) pays about
 * 3 us a walk instead. */
#define STEP_WALKS_FIRST 32
TLS unsigned step_walks;

static int walk_stack(uint64_t *ips, int depth)
{
    if (step_walks >= STEP_WALKS_FIRST)
        return fast_walk(ips, depth);
    step_walks++;
    return slow_walk(ips, NULL, depth);
}

static uint32_t hash_ips(const uint64_t *ips, int n, uint64_t sp0)
{
    uint64_t h = sp0 ^ (uint64_t)n;
    for (int i = 0; i < n; i++)
        h = (h ^ ips[i]) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 40);
}

/* After a fast walk that missed: make a memo of this stack (known by its
 * frames and where it was entered) when it keeps coming back and the slow
 * walk's budget allows. */
static void maybe_memoize(thread_memos *t, const native_capture *c, int depth, uint64_t ip0,
                          uint64_t sp0, uint64_t fp0)
{
    uint8_t *hot = &t->hot[hash_ips(c->ips, c->n, sp0) % HOT_SLOTS];
    if (*hot < HOT_AFTER) {
        (*hot)++;
        return;
    }
    if ((int32_t)(t->captures - t->slow_allowed_at) < 0)
        return;
    t->slow_allowed_at = t->captures + SLOW_EVERY;
    memo *w = &t->walked;
    int n = slow_walk(w->ips, w->sps, depth);
    /* The two walks must agree, and with the frame-pointer chain on where
     * the application starts, or the slots mean nothing to the next check. */
    if (n != c->n || memcmp(w->ips, c->ips, (size_t)n * sizeof *c->ips) != 0 ||
        w->sps[0] != sp0)
        return;
    w->ip0 = ip0;
    w->sp0 = sp0;
    w->fp0 = fp0;
    w->n = n;
    t->walked_valid = 1;
}

int native_stack_capture(native_capture *c, int depth, uint32_t generation, int nested)
{
    c->id = 0;
    c->n = 0;
    if (depth <= 0 || walking || !unwind_loaded)
        return 0;
    thread_memos *t = NULL;
    uint64_t ip0, sp0, fp0;
    if (!nested && depth <= MEMO_FRAMES && know_stack_bounds() && (t = thread_memos_get()) &&
        entry_point(&ip0, &sp0, &fp0)) {
        t->walked_valid = 0;
        t->captures++;
        memo *set = set_of(t, ip0, sp0);
        for (int i = 0; i < MEMO_WAYS; i++) {
            memo *m = &set[i];
            if (!still_there(m, ip0, sp0, fp0))
                continue;
            m->used = t->captures;
            c->n = m->n;
            if (m->generation == generation) {
                c->id = m->id;
            } else {            /* a new writer (fork): intern it again */
                memcpy(c->ips, m->ips, (size_t)m->n * sizeof *c->ips);
                t->walked = *m;
                t->walked_valid = 1;
            }
            return c->n;
        }
        c->n = walk_stack(c->ips, depth);
        if (c->n > 0 && c->ips[0] == ip0)
            maybe_memoize(t, c, depth, ip0, sp0, fp0);
        return c->n;
    }
    c->n = walk_stack(c->ips, depth);
    return c->n;
}

void native_stack_remember(uint32_t generation, uint32_t id)
{
    thread_mem *tm = thread_mem_peek();
    thread_memos *t = tm ? (thread_memos *)tm->stack_memos : NULL;
    if (!t || !t->walked_valid || !id || !generation)
        return;
    t->walked_valid = 0;
    memo *set = set_of(t, t->walked.ip0, t->walked.sp0), *m = &set[0];
    for (int i = 0; i < MEMO_WAYS; i++) {   /* an empty way, else the least recently used */
        if (!set[i].generation) {
            m = &set[i];
            break;
        }
        if ((int32_t)(set[i].used - m->used) < 0)
            m = &set[i];
    }
    m->generation = 0;   /* invalid while half written (a signal handler may look) */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    memcpy(m->ips, t->walked.ips, (size_t)t->walked.n * sizeof *m->ips);
    memcpy(m->sps, t->walked.sps, (size_t)t->walked.n * sizeof *m->sps);
    m->n = t->walked.n;
    m->ip0 = t->walked.ip0;
    m->sp0 = t->walked.sp0;
    m->fp0 = t->walked.fp0;
    m->id = id;
    m->used = t->captures;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    m->generation = generation;
}
