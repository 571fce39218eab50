/*
 * alloc_env.h - the memory pools' settings as the traced process saw them.
 *
 * PyTorch, TensorFlow/XLA and CuPy read their allocator settings from the
 * environment when their allocator starts, and programs often set them
 * with os.environ just before (never before the process started).  At the
 * first device allocation the tracer sees, the ones that are set go into
 * INFO records "env:NAME" = value, so trace-replay's models follow the
 * options the run used.
 */
#ifndef TRACE_ALLOC_ENV_H
#define TRACE_ALLOC_ENV_H

/* Records them once per process, before the event of the allocation that
 * calls it.  (A forked child's own log does not repeat them.) */
void alloc_env_note(void);

#endif
