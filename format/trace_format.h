/*
 * trace_format.h - the event log: records, the writer and the reader.
 *
 * This is the only code that encodes or decodes records; the preload and the
 * replayer both go through it.  format/FORMAT.md is the specification; this
 * header is its C face.
 *
 * A log is a sequence of zstd frames (content checksum on).  Each frame
 * decompresses to a run of records; every frame starts with a FRAME record that
 * resets the delta bases, so a frame decodes without the frames before it
 * (except for the ids its events refer to, which are defined once, earlier).
 */
#ifndef TRACE_FORMAT_H
#define TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TF_VERSION_MAJOR 2
#define TF_VERSION_MINOR 8

/* Record kinds.  Definitions (< 32) give ids meaning; events (>= 32) carry a
 * sequence number.  A reader skips kinds it does not know (records are
 * length-prefixed) as long as the major version matches. */
enum tf_kind {
    TF_REC_HEADER = 1,        /* first record of the file */
    TF_REC_FRAME = 2,         /* first record of every frame: delta bases */
    TF_REC_STRING = 3,        /* interned string: id, bytes */
    TF_REC_MODULE_LOAD = 4,   /* id, path, base, build-id, segments */
    TF_REC_MODULE_UNLOAD = 5, /* id */
    TF_REC_PY_CODE = 6,       /* id, file, function, first line */
    TF_REC_NATIVE_STACK = 7,  /* id, instruction pointers (innermost first) */
    TF_REC_PY_STACK = 8,      /* id, (code id, line) pairs (innermost first) */
    TF_REC_THREAD = 9,        /* tid, name */
    TF_REC_POOL = 10,         /* pool id, name */
    TF_REC_INFO = 11,         /* key, value: facts learnt after start */
    TF_REC_CHECKPOINT = 12,   /* 1.4: seq, producer, state: a replay's state after event seq */
    TF_REC_COLUMNS = 13,      /* 2.0: the whole frame as a column block (columns.h) */
    TF_REC_PY_STACK_PUSH = 14, /* 2.1: id, outer stack id, code id, line: a frame called from a stack */
    TF_REC_PY_STACK_CHAIN = 15, /* 2.2: id gap, outer as id - outer, n, n (code id, line): frames each
                                 * called from the stack before */

    TF_EV_CUDA_ALLOC = 32,
    TF_EV_CUDA_FREE = 33,
    TF_EV_POOL_ALLOC = 34,
    TF_EV_POOL_FREE = 35,
    TF_EV_POOL_OP_BEGIN = 36,
    TF_EV_POOL_OP_END = 37,
    TF_EV_POOL_SEGMENT = 38,
    TF_EV_GC_START = 39,
    TF_EV_GC_STOP = 40,
    TF_EV_HOST_ALLOC = 41,
    TF_EV_HOST_FREE = 42,
    TF_EV_PY_DOUBLE_INIT = 43,
    TF_EV_MARK = 44,
    TF_EV_END = 45,
    TF_EV_PY_ALLOC = 46,      /* opt-in: one GC-object allocation */
    TF_EV_RELEASE_FAILED = 47, /* 1.1: the release recorded at seq `release` failed */
    TF_EV_PY_FREE = 48,       /* 1.3, opt-in: an object freed inside a collection */
    TF_EV_PY_FREES = 49,      /* 2.3: a run of py_free events in one record; the reader
                               * returns them one by one, as py_free */
    TF_EV_PY_ALLOCS = 50,     /* 2.7: a run of py_alloc events in one record; the reader
                               * returns them one by one, as py_alloc */
    TF_EV_PY_ALLOCS_SPLIT = 51, /* 2.8: the same, its fields as streams (the writer's since 2.8) */
    TF_KIND_MAX = 64
};

/* The CUDA entry points a log names (enum tf_api) and their facts:
 * cuda_api.h. */
const char *tf_api_name(uint32_t api);   /* "api#N" style text for unknown */
const char *tf_kind_name(uint32_t kind); /* "cuda_alloc", ...; NULL if unknown */

/* pool_op_begin.op */
enum tf_pool_op { TF_POOL_OP_ALLOC = 1, TF_POOL_OP_FREE = 2, TF_POOL_OP_OTHER = 3 };
/* pool_segment.grow */
enum tf_segment_change { TF_SEGMENT_RELEASE = 0, TF_SEGMENT_GROW = 1 };
/* host_alloc.domain: the Python allocator domain, or where else the block
 * came from (MALLOC and MMAP: 1.1) */
enum tf_host_domain {
    TF_HOST_OTHER = 0, TF_HOST_RAW = 1, TF_HOST_MEM = 2, TF_HOST_OBJ = 3,
    TF_HOST_MALLOC = 4,   /* the C heap: malloc and its family */
    TF_HOST_MMAP = 5      /* an anonymous mapping: mmap, mremap */
};
/* host_alloc.api: the call that allocated or released the block (1.1; 0 in
 * older logs).  Python domains use the malloc/calloc/realloc/free numbers. */
enum tf_host_api {
    TF_HOST_API_UNKNOWN = 0, TF_HOST_API_MALLOC, TF_HOST_API_CALLOC, TF_HOST_API_REALLOC,
    TF_HOST_API_REALLOCARRAY, TF_HOST_API_POSIX_MEMALIGN, TF_HOST_API_ALIGNED_ALLOC,
    TF_HOST_API_MEMALIGN, TF_HOST_API_VALLOC, TF_HOST_API_PVALLOC, TF_HOST_API_FREE,
    TF_HOST_API_MMAP, TF_HOST_API_MUNMAP, TF_HOST_API_MREMAP,
    TF_HOST_API_MAP_REST,   /* 2.6: what is left of a mapping a call cut (FORMAT.md section 7) */
    TF_HOST_API_COUNT
};
const char *tf_host_api_name(uint32_t api);       /* "malloc", ...; "api#N" if unknown */
const char *tf_host_domain_name(uint32_t domain); /* "malloc", "mmap", "PyMem RAW"... */

/* tf_event.flags: events are missing right before this one (segments of a
 * log kept within a budget were deleted: FORMAT.md section 13; a fork's
 * child's first event; or a seq gap: a damaged or lost frame, section 10). */
#define TF_EVENT_AFTER_GAP 1u

/* One decoded event.  Fields a kind does not use are zero. */
typedef struct tf_event {
    uint32_t kind;          /* enum tf_kind, >= 32 */
    uint32_t tid;           /* OS thread id */
    uint64_t seq;           /* global order, starts at 1, no gaps */
    uint64_t t_ns;          /* CLOCK_MONOTONIC */
    uint64_t parent;        /* seq of the enclosing operation on this thread, 0 if none */
    uint32_t native_stack;  /* stack id, 0 if none */
    uint32_t py_stack;      /* stack id, 0 if none */
    uint32_t flags;         /* TF_EVENT_*: what the reader knows of its place; writers ignore it */
    union {
        struct {            /* cuda_alloc, cuda_free */
            uint32_t api;   /* enum tf_api */
            int32_t device;
            int32_t result; /* cudaError_t / CUresult */
            uint32_t flags;
            uint64_t ptr;   /* device pointer, VA, or handle for cuMemCreate */
            uint64_t size;  /* pitch allocations: total bytes; frees: 0 if unknown */
            uint64_t stream;
        } cuda;
        struct {            /* pool_alloc, pool_free */
            uint32_t pool;
            uint64_t ptr;
            uint64_t requested; /* pool_free: 0 if unknown */
            uint64_t granted;   /* pool_free: 0 if unknown */
            uint64_t stream;
        } pool;
        struct {            /* pool_op_begin, pool_op_end */
            uint32_t pool;
            uint32_t op;    /* enum tf_pool_op */
            uint64_t begin; /* pool_op_end: seq of its begin; begin: 0 */
            uint64_t arg;   /* begin: requested size or pointer freed */
        } pool_op;
        struct {            /* pool_segment */
            uint32_t pool;
            uint32_t grow;  /* enum tf_segment_change */
            uint64_t ptr;
            uint64_t size;
        } segment;
        struct {            /* gc_start, gc_stop */
            int32_t generation;
            uint64_t collected;      /* stop */
            uint64_t uncollectable;  /* stop */
            uint64_t duration_ns;    /* stop */
            uint64_t allocs[3];      /* start: GC-tracked allocations since the
                                        last collection of generation 0, 1, 2 */
            uint64_t interp;         /* the interpreter's id (0: the main one; 1.1) */
        } gc;
        struct {            /* host_alloc, host_free, py_alloc, py_free */
            uint32_t domain; /* enum tf_host_domain */
            uint64_t ptr;
            uint64_t size;   /* host_free: 0 if unknown */
            uint32_t api;    /* enum tf_host_api (1.1) */
        } host;
        struct {            /* py_double_init */
            uint64_t obj;
            uint32_t type_name; /* string id */
        } double_init;
        struct {            /* mark */
            uint32_t text;  /* string id */
        } mark;
        struct {            /* release_failed */
            uint64_t release; /* seq of the release (cuda_free, ...) that failed */
            int32_t result;   /* what the call returned */
        } release_failed;
        struct {            /* end: counts of everything written */
            uint64_t events;
            uint64_t strings;
            uint64_t native_stacks;
            uint64_t py_stacks;
            uint64_t frames;
        } end;
    } u;
} tf_event;

/* A zeroed event of a kind, padding too, with seven plain 16-byte stores:
 * GCC makes `tf_event e = { .kind = k }`, memset, and in a large function
 * even a copy of a zero event, a rep stos or rep movs, slow to start for
 * 112 bytes (a third of the column decoder's own loop went to one).  For
 * the hot paths: the writer's, the reader's and the recorder's hooks. */
static inline __attribute__((always_inline)) void tf_event_init(tf_event *e, uint32_t kind)
{
    typedef uint64_t tf_event_words __attribute__((vector_size(16), aligned(8), may_alias));
    _Static_assert(sizeof(tf_event) == 7 * sizeof(tf_event_words), "tf_event_init stores 7 words");
    tf_event_words *w = (tf_event_words *)(void *)e;
    const tf_event_words z = { 0, 0 };
    w[0] = z; w[1] = z; w[2] = z; w[3] = z; w[4] = z; w[5] = z; w[6] = z;
    e->kind = kind;
}

/* *dst = *src with seven 16-byte loads and stores, for the same reason:
 * the reader's hand-out of a decoded event, inlined by LTO into a caller's
 * loop, became a rep movs there (format-bench's reader: 18.5 -> 17.9 M
 * events/s with a faster decoder, until this). */
static inline __attribute__((always_inline)) void tf_event_copy(tf_event *dst, const tf_event *src)
{
    typedef uint64_t tf_event_words __attribute__((vector_size(16), aligned(8), may_alias));
    tf_event_words *d = (tf_event_words *)(void *)dst;
    const tf_event_words *s = (const tf_event_words *)(const void *)src;
    _Static_assert(sizeof(tf_event) == 7 * sizeof(tf_event_words), "tf_event_copy moves 7 words");
    tf_event_words w0 = s[0], w1 = s[1], w2 = s[2], w3 = s[3], w4 = s[4], w5 = s[5], w6 = s[6];
    d[0] = w0; d[1] = w1; d[2] = w2; d[3] = w3; d[4] = w4; d[5] = w5; d[6] = w6;
}

typedef struct tf_header {
    uint32_t version_major, version_minor;
    uint32_t pid, ppid;
    uint64_t wall_start_ns;   /* CLOCK_REALTIME */
    uint64_t mono_start_ns;   /* CLOCK_MONOTONIC */
    const char *hostname;
    const char *cmdline;      /* arguments joined by single spaces */
    const char *exe;
    const char *tracer_version;
    const char *settings;     /* "key=value;key=value" */
    const char *python_version; /* "" when unknown at start (see INFO) */
    int32_t cuda_runtime_version; /* 0 when unknown */
    int32_t cuda_driver_version;
    /* 1.2: a log kept within a budget (TRACE_MAX_BYTES) is a series of
     * segment files (FORMAT.md section 13).  All zero in a log of one file. */
    uint64_t max_bytes;       /* the budget in bytes; 0: the log is not cut */
    uint32_t segment;         /* this file's number in the series (0: the first) */
    uint64_t first_seq;       /* the first event this file can hold (segment > 0) */
} tf_header;

typedef struct tf_segment { uint64_t vaddr, memsz; uint32_t flags; } tf_segment;

typedef struct tf_module {
    uint32_t id;
    const char *path;
    uint64_t base;            /* load bias: runtime address = base + ELF vaddr */
    const uint8_t *build_id;
    uint32_t build_id_len;
    const tf_segment *segments; /* PT_LOAD segments, ELF vaddrs */
    uint32_t nsegments;
} tf_module;

typedef struct tf_py_frame { uint32_t code; uint32_t line; } tf_py_frame;

/* The deepest stack pushed frames (PY_STACK_PUSH, PY_STACK_CHAIN) may make
 * (FORMAT.md section 6): what bounds a reader's memory per stack they define. */
#define TF_PY_PUSH_DEPTH 256

typedef struct tf_py_code {
    uint32_t id;
    uint32_t file;            /* string id */
    uint32_t function;        /* string id */
    uint32_t first_line;
} tf_py_code;

/* The frame that ends a Python stack cut short (FORMAT.md section 6): it
 * stands for the outer frames the writer did not record.  Its code has an
 * empty file, this function name and first line 0; the frame's line is 0. */
#define TF_PY_CUT_FUNCTION "<outer frames not recorded>"

/* ------------------------------------------------------------------ writer */

typedef struct tf_writer tf_writer;

/* A run of encoded records, not yet compressed.  Buffers are swapped, not
 * copied, between the writer and its caller.  They are mapped pages, not heap
 * memory (the writer may grow one inside a signal handler): release a chunk
 * the writer handed out with tf_chunk_free, never free(). */
typedef struct tf_chunk { uint8_t *data; size_t len, cap; } tf_chunk;
void tf_chunk_free(tf_chunk *c);

/* Start a log: encodes the HEADER record into the first chunk.  Allocates; the
 * rest of the writer only allocates when an intern table or the chunk grows.
 * A header with max_bytes makes a writer that keeps a copy of the
 * definitions of the process's state it writes, for tf_writer_restate. */
tf_writer *tf_writer_new(const tf_header *h);
void tf_writer_free(tf_writer *w);

/* Definitions.  The interning calls return the existing id for content already
 * written (ids start at 1; 0 means "none"). */
uint32_t tf_write_string(tf_writer *w, const char *s, size_t n);
uint32_t tf_write_native_stack(tf_writer *w, const uint64_t *ips, uint32_t n);
uint32_t tf_write_py_code(tf_writer *w, uint32_t file, uint32_t function, uint32_t first_line);
/* The code of the frame that ends a stack cut short (TF_PY_CUT_FUNCTION). */
uint32_t tf_write_py_cut_code(tf_writer *w);
/* A Python stack of 1 to TF_PY_PUSH_DEPTH frames is written as pushes (each
 * stack a frame called from the one before, from the outermost), of which
 * only the frames not yet defined under their callers cost anything: one
 * PY_STACK_CHAIN record for all of them.  An empty or deeper stack is
 * one PY_STACK record.  Either way the same frames get the same id. */
uint32_t tf_write_py_stack(tf_writer *w, const tf_py_frame *frames, uint32_t n);
/* The stack frames[0..n) (innermost first, as above) called from stack
 * `outer` (0: none; else an id this writer returned, since the last segment
 * started, for a stack of at most TF_PY_PUSH_DEPTH - n frames): its id, the
 * one tf_write_py_stack gives the same frames.  ids, unless NULL, gets each
 * stack on the way: ids[i] is that of frames[i..n) called from outer.  0
 * when out of memory (ids then holds the stacks defined before it ran out,
 * from ids[n-1] inward). */
uint32_t tf_write_py_stack_push(tf_writer *w, uint32_t outer, const tf_py_frame *frames,
                                uint32_t n, uint32_t *ids);
uint32_t tf_write_module_load(tf_writer *w, const char *path, uint64_t base,
                              const uint8_t *build_id, uint32_t build_id_len,
                              const tf_segment *segs, uint32_t nsegs);
void tf_write_module_unload(tf_writer *w, uint32_t module_id);
void tf_write_thread(tf_writer *w, uint32_t tid, const char *name);
/* A thread's OS name and its Python name (threading.Thread.name; NULL or ""
 * when it has none).  A later THREAD record for the same tid renames it. */
void tf_write_thread_names(tf_writer *w, uint32_t tid, const char *name, const char *py_name);
void tf_write_pool(tf_writer *w, uint32_t pool, const char *name);
void tf_write_info(tf_writer *w, const char *key, const char *value);
/* A frame of its own, without a writer: a FRAME record (index, seq, t_ns)
 * and one INFO record, encoded into out.  For a recorder's last word once
 * its log can take no more (the disk full): its writer's frames are lost,
 * so seq is the last event it numbered, and a reader notes the events
 * between the last one in the file and seq as missing.  The encoded size,
 * or 0 when it does not fit in cap.  Allocates nothing. */
size_t tf_encode_info_frame(uint8_t *out, size_t cap, uint64_t index, uint64_t seq, uint64_t t_ns,
                            const char *key, const char *value);
/* A CHECKPOINT record (FORMAT.md section 14): the state of the program
 * `producer` names after event seq, opaque bytes.  Not restated in later
 * segments.  Dropped when out of memory, as any record. */
void tf_write_checkpoint(tf_writer *w, uint64_t seq, const char *producer, const void *state, size_t len);

/* Events: e->seq must be the previous event's seq + 1. */
void tf_write_event(tf_writer *w, const tf_event *e);
/* A py_alloc event: the bytes tf_write_event writes for e with kind
 * TF_EV_PY_ALLOC.  Reads e's common fields and u.host only (its kind,
 * flags and the rest of the union need not be set). */
void tf_write_py_alloc(tf_writer *w, const tf_event *e);
/* The same event in a PY_ALLOCS_SPLIT record (2.8; PY_ALLOCS in 2.7):
 * appended to the one the chunk ends with when it can join it (the next
 * seq, the same thread, parent and domain, no native stack, a time a whole
 * number of the log's units after the last one's, room left), else the
 * first of a new one.  A reader returns the same events as from
 * tf_write_py_alloc's records.  The time unit is the header's settings'
 * time_unit_ns (1 without one).  The record's streams are kept apart in
 * the writer (mapped at the first run: without that memory the events are
 * written as py_alloc records) and joined at the next run or seal. */
void tf_write_py_allocs(tf_writer *w, const tf_event *e);
/* tf_write_py_allocs in two: the allocation (no native stack) joined to
 * the record the chunk ends with (then tf_writer_pending's bytes, never
 * 0), or nothing written (0); then, for the event whose join failed, the
 * rest of tf_write_py_allocs.  For a caller that wants the join inline
 * with its fields in registers (the recorder's py_alloc_fast: the join
 * alone has one caller). */
size_t tf_write_py_allocs_join(tf_writer *w, uint64_t seq, uint32_t tid, uint64_t parent, uint64_t t_ns,
                               uint32_t domain, uint32_t py_stack, uint64_t ptr, uint64_t size, uint32_t api);
void tf_write_py_allocs_rest(tf_writer *w, const tf_event *e);
/* py_free events (kind TF_EV_PY_FREE), a collection's burst of them, as
 * PY_FREES records (2.3): tf_write_py_free_joins appends e to the record the
 * chunk ends with when e can join it (the next seq, the same thread,
 * parent, stacks and domain, room left), giving e that record's time, and
 * returns 1; else it writes nothing and returns 0, and tf_write_py_frees
 * starts a new record with e (its t_ns set by the caller).  So only the
 * first free of a run needs a clock reading. */
int tf_write_py_free_joins(tf_writer *w, tf_event *e);
/* The same for a free without stacks, given by its fields (a recorder's,
 * which then builds no tf_event for a free that joins; the joined free's
 * time is the record's, as above). */
int tf_write_py_free_joins_bare(tf_writer *w, uint64_t seq, uint32_t tid, uint64_t parent, uint32_t domain,
                                uint64_t ptr);
/* tf_write_py_free_joins_bare where it needs no call: 0 also when the
 * chunk has no room for the free (growing it is the other's). */
int tf_write_py_free_joins_leaf(tf_writer *w, uint64_t seq, uint32_t tid, uint64_t parent, uint32_t domain,
                                uint64_t ptr);
void tf_write_py_frees(tf_writer *w, const tf_event *e);

/* Bytes encoded since the last seal.  Seal well before 64 MiB: a frame's
 * content may not exceed that (FORMAT.md section 1). */
size_t tf_writer_pending(const tf_writer *w);

/* Hand the records encoded since the last seal to the caller in *out, taking
 * *out's old buffer in exchange (so steady state allocates nothing).  The next
 * record starts a new frame. */
void tf_writer_seal(tf_writer *w, tf_chunk *out);

/* Where a writer stands between frames, to take back a frame that was
 * written but must not count (the END written before exec, when exec then
 * fails).  Take the mark right after a seal; tf_writer_rewind drops whatever
 * was encoded since and puts seq, time, frame and event counts back, so the
 * next frame continues the log as if nothing had been written after the mark.
 * Definitions interned after the mark must not be used again (record none). */
typedef struct tf_writer_mark { uint64_t frames_sealed, seq, t_ns, events; size_t journal; } tf_writer_mark;
tf_writer_mark tf_writer_get_mark(const tf_writer *w);
void tf_writer_rewind(tf_writer *w, const tf_writer_mark *m);

/* The opening frame of a new segment file (FORMAT.md section 13): HEADER
 * (segment, first_seq = the next event's seq) and every definition of the
 * process's state written so far (modules still loaded, pools, INFO;
 * not THREAD records: the caller names each thread again before its first
 * event in the segment), with the same ids, in the same order, encoded into *out (which
 * grows by mapped pages, as chunks do).  The writer then forgets its
 * interned strings, stacks and code objects: content used again is defined
 * again under a new id (ids are never reused), and tf_writer_epoch changes,
 * so callers that remember ids of interned content look them up again.
 * Call it right after a seal, with nothing encoded since.  0, or -1 when the
 * writer keeps no journal, ran out of memory keeping it, or records were
 * encoded since the seal. */
int tf_writer_restate(tf_writer *w, uint32_t segment, tf_chunk *out);
uint32_t tf_writer_epoch(const tf_writer *w);
/* Memory the writer's intern tables hold (strings, stacks, code objects). */
size_t tf_writer_interned_bytes(const tf_writer *w);
/* Forget the interned content as tf_writer_restate does, without a new
 * segment: content used again is defined again under a new id in the same
 * log, and tf_writer_epoch changes.  Right after a seal only (else -1).  A
 * run whose stacks never repeat (code made by exec, a site per request)
 * otherwise grows these tables for as long as it runs. */
int tf_writer_forget_interned(tf_writer *w);
/* Forget the native stacks alone (a module was unloaded): the same
 * addresses, met again, are defined again under a new id, after the
 * MODULE_LOAD of whatever holds them now.  A reader resolves a native
 * stack with the modules loaded at its definition (FORMAT.md section 6),
 * so an id kept across an unload would name the unloaded module's file
 * for code another module put at the same addresses. */
void tf_writer_forget_native_stacks(tf_writer *w);

/* Compress a sealed chunk into one checksummed zstd frame and write all of it.
 * cctx is a ZSTD_CCtx* the caller keeps (NULL: one is made and freed).
 * Returns 0, or -errno of the failed write. */
int tf_chunk_write(int fd, const tf_chunk *c, void *cctx, int level);

/* The same frame into memory: at most cap bytes at out (tf_chunk_bound(c)
 * always suffice).  cctx as above, but required.  Returns the frame's size,
 * or 0 when it did not fit or the compressor failed. */
size_t tf_chunk_bound(const tf_chunk *c);
/* write(2) until all n bytes are written (EINTR retried).  0 or -errno. */
int tf_write_all(int fd, const void *data, size_t n);
size_t tf_chunk_compress(const tf_chunk *c, void *cctx, int level, void *out, size_t cap);

/* The same, as a column block (FORMAT.md section 15) when enc (columns.h)
 * is given and the chunk makes one, times in units of tunit ns; as records
 * otherwise.  tf_chunk_bound(c) still suffices. */
struct tf_colenc;
size_t tf_chunk_compress_columns(const tf_chunk *c, struct tf_colenc *enc, uint64_t tunit,
                                 void *cctx, int level, void *out, size_t cap);
/* tf_chunk_write's column form (tools that write logs). */
int tf_chunk_write_columns(int fd, const tf_chunk *c, struct tf_colenc *enc, uint64_t tunit,
                           void *cctx, int level);

/* ---------------------------------------------------------------- segments */

/* The file of segment k of the log at log_path (FORMAT.md section 13):
 * log_path itself for k = 0, else ".segK" before the extension of its last
 * component (trace-1234.tlog -> trace-1234.seg3.tlog).  0, or -1 when it
 * does not fit in cap.  Allocates nothing (the recorder calls it). */
int tf_segment_path(char *out, size_t cap, const char *log_path, uint32_t k);
/* Back from segment k's path to the log's (the first segment's): 0, or -1
 * when seg_path is not named as segment k. */
int tf_segment_log_path(char *out, size_t cap, const char *seg_path, uint32_t k);
/* k >= 1 when the directory entry name is segment k of the log at log_path
 * (in the same directory), else 0. */
uint32_t tf_segment_number(const char *name, const char *log_path);

/* ------------------------------------------------------------------ reader */

typedef struct tf_reader tf_reader;

typedef struct tf_read_status {
    uint64_t events;          /* events returned */
    uint64_t frames;          /* frames decoded (whole or in part) */
    uint64_t corrupt_frames;  /* frames whose checksum or records failed */
    uint64_t column_blocks;   /* frames that were column blocks (2.0), decoded */
    int clean_end;            /* an END record was read */
    int truncated;            /* the file stops inside a frame or record */
    uint64_t last_seq;        /* seq of the last event returned */
    uint64_t next_run_offset; /* another log starts at this byte of the file
                                 (logs joined with cat): this one ended there;
                                 0 when none does */
    /* Following a log (tf_reader_open_follow): tf_reader_next returned 0
     * because nothing more is there yet, not because the log ended. */
    int waiting;
    /* Segmented logs (FORMAT.md section 13). */
    uint32_t segment;         /* the segment being read */
    uint64_t segment_first_seq; /* its first event */
    uint64_t gaps;            /* times events were missing between segments read */
    uint64_t gap_seq;         /* the first event after the latest gap */
    uint64_t lost_events;     /* events in segments deleted before they were read */
    /* Events missing where nothing says why (FORMAT.md section 10): a seq
     * gap no deleted segment, fork, checkpoint or damaged frame explains
     * (a frame lost whole), or seqs that go back.  Damage: noted, and the
     * event after it is flagged TF_EVENT_AFTER_GAP. */
    uint64_t seq_gaps;        /* times */
    uint64_t missing_events;  /* events missing in them */
} tf_read_status;

/* Open a log.  NULL with a message in err when the file cannot be read, is not
 * a log, or has another major version ("log format version 2.x; this reader
 * understands 1.x"). */
tf_reader *tf_reader_open(const char *path, char *err, size_t errlen);
/* Same, over a memory buffer the caller keeps alive (fuzzers, tests). */
tf_reader *tf_reader_open_mem(const void *data, size_t len, char *err, size_t errlen);
/* A log cut into segments (its header's max_bytes; FORMAT.md section 13) is
 * read by tf_reader_open as one log from any of its files: the first
 * segment, then each later one still on disk, with a damage note for each
 * run of deleted segments (status gaps, gap_seq, lost_events).
 *
 * Following a log while it is written: tf_reader_open_follow opens it as
 * soon as its first frame is complete (NULL with *again set while the file
 * does not exist or that frame is still being written; *again clear when it
 * is not a log).  tf_reader_next then returns 0 with status waiting set when
 * it has read everything written so far: call it again once the file grew
 * (a frame still being written is waited for, not reported as cut short).
 * Later segments are taken up as the writer starts them.  tf_reader_final
 * says the writer is gone: what is on disk is all there will be, and the
 * next calls read it to the end with the usual damage rules. */
tf_reader *tf_reader_open_follow(const char *path, int *again, char *err, size_t errlen);
void tf_reader_final(tf_reader *r);
void tf_reader_close(tf_reader *r);

/* Next event in file order (which is seq order).  Definitions met on the way
 * are absorbed.  Returns 1 with *e filled, 0 at the end of what is readable
 * or where another log begins (status next_run_offset). */
int tf_reader_next(tf_reader *r, tf_event *e);
/* Another log follows in the same file (a frame opening with a HEADER: two
 * logs joined with cat): start reading it as a run of its own (header,
 * definitions, status and damage all its own).  1, or 0 when none follows. */
int tf_reader_next_run(tf_reader *r);
const tf_read_status *tf_reader_status(const tf_reader *r);
/* One line describing damage ("truncated after event 1234", "frame 7 corrupt
 * (checksum), resumed at frame 8"), or NULL when the log is whole. */
const char *tf_reader_damage(const tf_reader *r);

const tf_header *tf_reader_header(const tf_reader *r);
/* The path of the log's first segment (the log's own path; FORMAT.md
 * section 13) for a reader of files, NULL for one of memory. */
const char *tf_reader_log_path(const tf_reader *r);
const char *tf_reader_string(const tf_reader *r, uint32_t id, size_t *len);
int tf_reader_native_stack(const tf_reader *r, uint32_t id, const uint64_t **ips, uint32_t *n);
int tf_reader_py_stack(const tf_reader *r, uint32_t id, const tf_py_frame **frames, uint32_t *n);
/* The frames of Python stack id one at a time, innermost first, without
 * making the stack one array (tf_reader_py_stack does, and keeps it: 8
 * bytes a frame of every stack asked for, 189 MB of a 222-million-event
 * log's report, which looks at a stack's innermost frames only).
 * tf_reader_py_walk: 0 when the log has no such stack, else 1 and the
 * depth; then tf_py_walk_next gives 1 and the next frame, 0 after the last. */
typedef struct tf_py_walk {
    const tf_reader *r;
    const tf_py_frame *array;  /* the rest of the frames in one array, or NULL */
    uint32_t at;               /* else: the stack whose push comes next */
    uint32_t left;
} tf_py_walk;
int tf_reader_py_walk(const tf_reader *r, uint32_t id, tf_py_walk *w, uint32_t *depth);
int tf_py_walk_next(tf_py_walk *w, tf_py_frame *f);
const tf_py_code *tf_reader_py_code(const tf_reader *r, uint32_t id);
/* Whether code `id` is that of the frame ending a stack cut short. */
int tf_reader_py_code_is_cut(const tf_reader *r, uint32_t id);
const char *tf_reader_thread_name(const tf_reader *r, uint32_t tid);
/* Its Python name (threading.Thread.name), "" when it has none or unknown. */
const char *tf_reader_thread_py_name(const tf_reader *r, uint32_t tid);
const char *tf_reader_pool_name(const tf_reader *r, uint32_t pool);
/* Modules loaded at this point of the read, and the one holding ip (NULL if
 * none).  Unloaded modules stay reachable by id for symbolising old stacks. */
const tf_module *tf_reader_module_for(const tf_reader *r, uint64_t ip);
/* The module that held ip when native stack `stack` was defined (the modules
 * loaded then; failing that, the first loaded after it), whatever was loaded
 * or unloaded since: a frame of a module unloaded before this point of the
 * read, whose addresses another module took, is still the first one's.
 * Falls back on tf_reader_module_for when the stack is not known. */
const tf_module *tf_reader_stack_module(const tf_reader *r, uint32_t stack, uint64_t ip);
const tf_module *tf_reader_module(const tf_reader *r, uint32_t id);
uint32_t tf_reader_module_count(const tf_reader *r);
/* The i-th module met, 0-based, in the order the log loaded them. */
const tf_module *tf_reader_module_at(const tf_reader *r, uint32_t i);
/* MODULE_UNLOAD records of loaded modules read so far, in order: the id of
 * the i-th, 0-based (0 past the end). */
uint32_t tf_reader_unload_count(const tf_reader *r);
uint32_t tf_reader_unload_at(const tf_reader *r, uint32_t i);
/* INFO records read so far, in order: key/value of the i-th, 0-based. */
uint32_t tf_reader_info_count(const tf_reader *r);
int tf_reader_info(const tf_reader *r, uint32_t i, const char **key, const char **value);
/* The last CHECKPOINT record read so far (1.4): 1 with its fields (the
 * state's bytes live as long as the reader), 0 when none was. */
int tf_reader_checkpoint(const tf_reader *r, uint64_t *seq, const char **producer, const void **state,
                         size_t *len);
/* Lists of threads and pools, for reports. */
uint32_t tf_reader_thread_count(const tf_reader *r);
int tf_reader_thread_at(const tf_reader *r, uint32_t i, uint32_t *tid, const char **name);
/* How many THREAD records named a thread already named (a rename, or its
 * Python name given later): a change of it means names may have changed. */
uint64_t tf_reader_thread_renames(const tf_reader *r);
uint32_t tf_reader_pool_count(const tf_reader *r);
int tf_reader_pool_at(const tf_reader *r, uint32_t i, uint32_t *pool, const char **name);

#ifdef __cplusplus
}
#endif
#endif
