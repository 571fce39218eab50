/*
 * unwind_pipe.h - libunwind validates addresses without opening a pipe
 * (see unwind_pipe.c).
 */
#ifndef TRACE_UNWIND_PIPE_H
#define TRACE_UNWIND_PIPE_H

/* Before libunwind first sets itself up.  Returns how many of libunwind's
 * imports now go to our replacements (0: none; it opens its pipe). */
int unwind_pipe_install(void);

#endif
