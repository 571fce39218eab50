/*
 * segv_early.h - the app's SIGSEGV handler for segv_app: it counts the fault
 * and jumps back to segv_recovery.
 */
#ifndef SEGV_EARLY_H
#define SEGV_EARLY_H

#include <setjmp.h>
#include <signal.h>

extern sigjmp_buf segv_recovery;
extern volatile sig_atomic_t segv_handled;
/* libsegv_early.so: 1 when its handler went in before anyone else's. */
extern int segv_installed_first;
void segv_install_handler(void);

#endif
