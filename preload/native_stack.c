/*
 * native_stack.c - stacks with libunwind's unw_backtrace.
 *
 * unw_backtrace walks with cached unwind information (per thread, so no lock
 * is shared between threads and it is safe in a signal handler).  The first
 * frames are always the tracer's own (the recorder, the hook); they tell a
 * reader nothing, so they are cut off by address.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "native_stack.h"
#include "recorder.h"
#include "unwind_pipe.h"

#include <link.h>

/* Our own frames at the top of a stack: the recorder, the hook, a wrapper
 * (at most 7 today).  Walking costs per frame, so ask for no more. */
#define OWN_FRAMES_MAX 8

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

void native_stack_init(void)
{
    unwind_pipe_patched = unwind_pipe_install();
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    dl_iterate_phdr(find_own_text, (void *)(uintptr_t)native_stack_init);
}

void native_stack_note(void)
{
    if (!unwind_pipe_patched)
        rec_info("native_stacks", "libunwind's address-validation pipe is open (its imports were not found)");
}

int native_stack_is_ours(uintptr_t ip)
{
    return ip >= own_lo && ip < own_hi;
}

int native_stack_capture(uint64_t *ips, int depth)
{
    if (depth <= 0)
        return 0;
    void *raw[NATIVE_STACK_MAX + OWN_FRAMES_MAX];
    int n = unw_backtrace(raw, depth + OWN_FRAMES_MAX);
    int skip = 0;
    while (skip < n && skip < OWN_FRAMES_MAX && native_stack_is_ours((uintptr_t)raw[skip]))
        skip++;
    int kept = n - skip < depth ? n - skip : depth;
    for (int i = 0; i < kept; i++)
        ips[i] = (uint64_t)(uintptr_t)raw[skip + i];
    return kept;
}
