/*
 * fds.h - the tracer's descriptors: out of the app's way and out of its reach.
 *
 * Ours are the log (log_file.c) and the pipe libunwind opens to validate
 * addresses.  They sit at high numbers, close-on-exec, so the app's first
 * open() still returns 3 and a child it execs sees none of them.  close,
 * close_range, closefrom, dup2 and dup3 are interposed: closing one of ours
 * succeeds without closing it (the app never knew it was open), and a dup2
 * onto one of ours moves the log elsewhere first.  pipe2 and pipe are
 * interposed so that the pipe libunwind opens inside our own calls lands high.
 */
#ifndef TRACE_FDS_H
#define TRACE_FDS_H

/* fd copied to a high number (close-on-exec) and the original closed; the new
 * number, or fd itself when no high number is free. */
int fds_move_high(int fd);

/* A close-on-exec copy of fd at a high number, fd left open; -1 if none. */
int fds_copy_high(int fd);

/* The set of our descriptors. */
void fds_add(int fd);
void fds_remove(int fd);
int fds_is_ours(int fd);

/* The real calls, for our own descriptors. */
int fds_real_close(int fd);
int fds_real_dup3(int oldfd, int newfd, int flags);

/* Around calls into libunwind: a pipe it opens is ours and goes high, and it
 * may close its own. */
void fds_unwinder_enter(void);
void fds_unwinder_leave(void);

/* Set when the app took the number of libunwind's pipe (dup2 onto it):
 * libunwind would read and write the app's file, so no more stacks. */
int fds_unwinder_lost(void);

#endif
