/*
 * private_files.h - the flusher's files, opened where the program cannot
 * see them.
 *
 * The log is written by path, open-append-close, and the flusher looks at
 * /proc/self/stat when idle.  Each such descriptor lives for microseconds,
 * but in the program's descriptor table it takes the lowest free number:
 * the program's open() in that moment gets another number than it expects
 * (daemon code that closes 0 and opens /dev/null as its stdin), and a
 * program that closes every descriptor from 3 up and opens its own in that
 * moment gets ours closed under us and its own in our number, which our
 * write and close would then go to.
 *
 * So the flusher hands its file work to a helper thread whose descriptor
 * table is its own, and starts empty (close_range with
 * CLOSE_RANGE_UNSHARE): nothing the helper opens is in the program's
 * table, nothing the program closes is the helper's, and the helper holds
 * none of the program's files.  The flusher itself keeps
 * the program's table: it may end the process (exit() when it is the last
 * thread), which must flush the program's stdio into the program's files.
 *
 * Where there is no helper (the flusher's file work at the process's
 * ending, which runs on the program's own thread; a kernel before 5.9, or
 * a seccomp policy that refuses close_range; no thread to be had), the
 * work runs on the calling thread, in the program's table, guarded: every
 * write and every close of ours first checks (fstat) that the number still
 * holds the file we opened, and a number the program took meanwhile is
 * left alone (pf_write_all, pf_close).
 */
#ifndef TRACE_PRIVATE_FILES_H
#define TRACE_PRIVATE_FILES_H

#include <stddef.h>
#include <sys/types.h>

/* The helper is made by the thread that makes the flusher, just before
 * it, with every signal blocked (pf_launch: 0, or -1 with no thread made),
 * not by the flusher: making a thread allocates (glibc's pthread_create
 * callocs the new thread's TLS vector on the creating thread), and that
 * one allocation on the flusher, which otherwise never allocates, gave it
 * a malloc arena of its own: 64 MiB of address space (128 MiB at its
 * peak), which a program under `ulimit -v` that runs bare could not spare.
 * The flusher adopts the helper as it starts (pf_start: waits for it to
 * have its own table) and stops it before it returns (pf_stop); a flusher
 * that could not be made has it stopped (pf_cancel).  Start fails quietly
 * (the work then runs inline, guarded). */
#include <pthread.h>
int pf_launch(const pthread_attr_t *attr);
void pf_start(void);
void pf_stop(void);
void pf_cancel(void);

/* Run op(arg) in the helper's table when called on the thread that
 * started it and the helper runs; otherwise here.  Returns op's value. */
int pf_run(int (*op)(void *arg), void *arg);

/* Is the helper running (it is one of the process's threads)? */
int pf_helper_running(void);

/* Is this thread the helper (its descriptors are its own)? */
int pf_in_private_table(void);

/* In a forked child: no helper came along. */
void pf_fork_child(void);

/* A descriptor of ours and the file it was opened on. */
typedef struct pf_file { int fd; dev_t dev; ino_t ino; } pf_file;

/* f->fd still holds the file opened as f. */
int pf_still_ours(const pf_file *f);
/* Append all of buf: 0, or -errno; -EBADF when the number stopped holding
 * our file (the program closed it: *written says how much got out). */
int pf_write_all(const pf_file *f, const void *buf, size_t n, size_t *written);
/* Close f's descriptor unless the number holds another file now. */
void pf_close(const pf_file *f);

#endif
