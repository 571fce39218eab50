/*
 * thread_names.c - a thread renamed through prctl(PR_SET_NAME) or
 * pthread_setname_np (a thread may rename another) makes every thread look
 * at its own OS name again at its next event (recorder.h).  Writes to
 * /proc/self/task/TID/comm go unseen until the next such rename.
 */
#include "real_fns.h"
#include "recorder.h"

#include <pthread.h>
#include <stdarg.h>
#include <sys/prctl.h>

int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long),
                  a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    int rc = REAL(prctl, int (*)(int, ...))(option, a2, a3, a4, a5);
    if (rc == 0 && option == PR_SET_NAME)
        rec_threads_renamed();
    return rc;
}

int pthread_setname_np(pthread_t thread, const char *name)
{
    int rc = REAL(pthread_setname_np, int (*)(pthread_t, const char *))(thread, name);
    if (rc == 0)
        rec_threads_renamed();
    return rc;
}
