/*
 * stacks.h - stack ids from a log to readable frames, each resolved once.
 *
 * Native frames: instruction pointer, the module holding it (from the log's
 * module records) and the offset in it; function, file and line come from
 * offline symbolisation (symbolize.h) when the binaries or their debug files
 * are found.  Python frames: file, line and function from the log's code
 * records.
 *
 * A log names the same few thousand frames millions of times: each distinct
 * frame (module, address) is symbolised once, and each stack id is turned
 * into its frames once; later calls cost a lookup.  Frames are classified
 * (the program's code, the interpreter, process start-up, the tracer) so that
 * printers can put the program's code first and fold the rest.
 */
#ifndef RN_STACKS_H
#define RN_STACKS_H

#include <stdint.h>

#include "trace_format.h"

/* Whose code a native frame is. */
typedef enum rn_frame_kind {
    RN_FRAME_USER,             /* the program, its libraries and extension modules */
    RN_FRAME_INTERPRETER,      /* CPython: libpython, or a static interpreter's executable */
    RN_FRAME_STARTUP,          /* the loader, libc's process and thread start-up */
    RN_FRAME_TRACER            /* libtrace.so's own hooks */
} rn_frame_kind;

typedef struct rn_native_frame {
    uint64_t ip, offset;
    const char *module;        /* NULL when no module holds ip */
    const char *function;      /* NULL when unknown */
    const char *inlined;       /* the function inlined into `function` whose code
                                * this is (file and line are its), NULL if none */
    const char *file;
    uint32_t line;             /* 0 when unknown */
    rn_frame_kind kind;
} rn_native_frame;

typedef struct rn_py_frame {
    const char *file, *function;   /* NULL when unknown */
    uint32_t line;
} rn_py_frame;

typedef struct rn_stacks rn_stacks;

/* reader: where stacks and modules come from (NULL: every stack is empty);
 * debug_dirs: extra directories searched for binaries and debug files. */
rn_stacks *rn_stacks_new(const tf_reader *reader, const char *const *debug_dirs, int ndirs);
void rn_stacks_free(rn_stacks *s);
/* Read stacks from this reader from now on (the same log opened again).
 * Frames handed out before point into the old reader: do not keep them. */
void rn_stacks_use_reader(rn_stacks *s, const tf_reader *reader);

/* The frames of a stack, innermost first, as pointers into the cache: at most
 * max are written to out; returns how many.  Valid until rn_stacks_free. */
uint32_t rn_stacks_native(rn_stacks *s, uint32_t id, const rn_native_frame **out, uint32_t max);
uint32_t rn_stacks_py(rn_stacks *s, uint32_t id, const rn_py_frame **out, uint32_t max);
/* How many frames the stack has (0 for none or an unknown id). */
uint32_t rn_stacks_native_depth(rn_stacks *s, uint32_t id);

/* Both stacks as the JSON members "native_stack" and "py_stack", the one
 * shape every JSON output uses (FORMAT.md section 11): innermost first,
 * native frames {"ip":"0x..","module":S,"offset":"0x..","function":S,
 * "file":S,"line":N,"kind":"user"|"interpreter"|"startup"|"tracer"} and
 * Python frames {"file":S,"line":N,"function":S}, null for what is unknown;
 * [] for no stack.  Each distinct frame is rendered once. */
struct rn_json;
void rn_json_stacks(struct rn_json *j, rn_stacks *s, uint32_t native, uint32_t py);

/* The function of each frame of a stack, innermost first (NULL where
 * unknown), from the symbol table alone: the replay asks this of a
 * collection's stack to place it, and check --follow must not wait for a
 * module's line table to be read (0.1 to 0.9 s the first time a module's
 * DWARF is met).  At most max; returns how many.  Names stay valid until
 * rn_stacks_free. */
uint32_t rn_stacks_functions(rn_stacks *s, uint32_t id, const char **out, uint32_t max);
/* 1 when a frame of native stack id is in a function whose name contains
 * key (lowercase); function names alone, as rn_stacks_functions. */
int rn_stacks_has_function(rn_stacks *s, uint32_t id, const char *key);

/* When module m's frames go unresolved because the file found for it is
 * another build than the one recorded: that file's path
 * (sym_module_differs); NULL otherwise. */
const char *rn_stacks_module_differs(rn_stacks *s, const tf_module *m);

/* 1 when a native stack of n frames went through a frame outside every
 * loaded module: code made at run time (numba's, a JIT's), which has no
 * unwind information, so the unwinder either stopped there (the outer
 * frames are unknown) or went on by guessing from frame pointers (the
 * frames after it may be wrong).  Printers say so (RN_NATIVE_CUT_TEXT)
 * rather than let the stack look whole and sure. */
int rn_native_walk_cut(const rn_native_frame *const *f, uint32_t n);
#define RN_NATIVE_CUT_TEXT                                                                          \
    "... a frame outside any loaded module (JIT-compiled code, without unwind information): the frames " \
    "outward of it may be wrong, and outer ones missing"

/* A frame as one line of text: "func (file.c:3) libfoo.so+0x1c" and
 * "file.py:12 (func)".  Raw: a text printer escapes it (text.h). */
void rn_native_frame_text(const rn_native_frame *f, char *buf, size_t len);
void rn_py_frame_text(const rn_py_frame *f, char *buf, size_t len);
/* Whether f is the frame ending a stack cut short (TF_PY_CUT_FUNCTION):
 * its text is "... (outer frames not recorded)". */
int rn_py_frame_is_cut(const rn_py_frame *f);
/* How many frames from f[i] on are the same frame as f[i] (a recursion
 * repeats one call): 1 when the next differs.  A text printer shows the
 * first RN_PY_RUN_SHOWN of a longer run and says how many more there are,
 * as CPython's tracebacks do. */
#define RN_PY_RUN_SHOWN 3
uint32_t rn_py_run(const rn_py_frame *const *f, uint32_t n, uint32_t i);
/* How many frames the Python stack has (0 for none or an unknown id). */
uint32_t rn_stacks_py_depth(rn_stacks *s, uint32_t id);

/* Folding for text output: runs of frames that are not the program's own
 * (interpreter, start-up, tracer) of at least 2 frames become one line.
 * rn_fold_next: from frame i, how many frames the next line covers (1, or
 * the length of a foldable run); *what names the run ("CPython",
 * "start-up", "libtrace.so"), NULL for a single frame shown whole. */
uint32_t rn_fold_next(const rn_native_frame *const *f, uint32_t n, uint32_t i, const char **what);

#endif
