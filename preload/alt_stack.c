/*
 * alt_stack.c - the calling thread's alternate signal stack, set where it
 * has none (see alt_stack.h).
 */
#include "alt_stack.h"

#include <signal.h>

int alt_stack_take(void *lo)
{
    stack_t old;
    /* SS_DISABLE: none.  Anything else is the program's, or a runtime's
     * (ASan and Rust set one on each thread they start): never replaced. */
    if (sigaltstack(NULL, &old) != 0 || !(old.ss_flags & SS_DISABLE))
        return 0;
    stack_t ours = { .ss_sp = lo, .ss_size = ALT_STACK_SIZE, .ss_flags = 0 };
    return sigaltstack(&ours, NULL) == 0;
}

int alt_stack_release(void *lo)
{
    stack_t now;
    if (sigaltstack(NULL, &now) != 0)
        return 0;
    if ((now.ss_flags & SS_DISABLE) || now.ss_sp != lo)
        return 1;   /* not ours (any more): the program's to keep */
    if (now.ss_flags & SS_ONSTACK)
        return 0;   /* a handler running on it ends the thread */
    stack_t off = { .ss_flags = SS_DISABLE };
    return sigaltstack(&off, NULL) == 0;
}
