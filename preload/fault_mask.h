/*
 * fault_mask.h - a fault on a thread that blocks the fault signals still
 * leaves a whole log.
 *
 * The kernel does not hold back a fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE
 * raised by the thread's own instruction) that the thread blocks: it puts
 * SIG_DFL in place for the whole process and kills it (the kernel's
 * force_sig_info_to_task), so no handler runs, ours included, and the log
 * had no END.  faulthandler's watchdog thread (`dump_traceback_later`,
 * pytest's `faulthandler_timeout`) blocks every signal and reads the other
 * threads' frames without the GIL, which can fault: such a crash left
 * neither faulthandler's message nor our END.
 *
 * So pthread_sigmask() and sigprocmask() are interposed: the four fault
 * signals stay unblocked in the kernel whatever the program asks, and the
 * thread reads back the mask it asked for (which of the four it blocked is
 * noted per thread).  A fault there reaches our handler, which stands in
 * for SIG_DFL: the log is finished, then the fault kills the process as the
 * kernel would have (same signal, a core where there would have been one).
 *
 * Where it differs from bare (docs/guarantees.md says so): a handler the
 * program installed for a fault signal (faulthandler.enable()) runs for a
 * fault on such a thread, where the kernel would have killed the process
 * without it; one of these four sent by kill() or tgkill() to such a thread
 * is taken at once instead of waiting; a thread started by one that blocked
 * them reads them back unblocked; an exec'd image starts with them
 * unblocked; sigwait() for one of them does not get it.  What a thread
 * reads back is what it last set through these two calls: a change the
 * kernel makes on its own (a handler's return, siglongjmp) is not seen.
 * Masks set otherwise (sigsetmask, sighold, a handler's sa_mask, the raw
 * system call), and a change a vfork child or a library constructor run
 * before ours makes, are left as they are: a fault there still kills the
 * process without our handler.
 *
 * Failure policy: the program's call is made, and its result returned, as
 * it would be bare; nothing of ours can fail on this path.
 */
#ifndef TRACE_FAULT_MASK_H
#define TRACE_FAULT_MASK_H

#include <signal.h>

/* The real pthread_sigmask, for the tracer's own masks (its threads block
 * every signal, faults included: a fault of ours is not the app's). */
int own_sigmask(int how, const sigset_t *set, sigset_t *old);

#endif
