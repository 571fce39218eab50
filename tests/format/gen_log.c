/*
 * gen_log - writes a small log with every kind of record, for the trace-dump
 * tests and the fuzzer's corpus.
 *
 *   gen_log OUT [MARKS [RANDOM [POOL]]]
 *
 * MARKS mark events follow the fixed ones, then RANDOM arbitrary events
 * (every field of their kind set to an arbitrary value) over several frames,
 * then POOL requests of a CuPy-like pool (pool_stream.h).  With POOL > 0
 * every frame is written as a column block where it makes one (FORMAT.md
 * section 15): the pool's frames do, arbitrary events' mostly do not.
 * Native stacks point into this program (recorded as a module with its real
 * build-id), so trace-dump can symbolise them.  Prints one JSON line of what
 * a reader should find: event count, and the function, file and line of the
 * first two frames of the stack every allocation carries.
 */
#include <fcntl.h>

#include "columns.h"
#include "pool_stream.h"
#include "self_module.h"
#include "tf_test.h"

static tf_colenc *enc;   /* with POOL: frames as column blocks */

static void flush(tf_writer *w, int fd, tf_chunk *chunk)
{
    tf_writer_seal(w, chunk);
    if (tf_chunk_write_columns(fd, chunk, enc, 1000, NULL, 1) != 0) {
        fprintf(stderr, "tf_chunk_write failed\n");
        exit(1);
    }
}

static uint64_t stack_ips[4];
static int call_line;

static __attribute__((noinline)) uint64_t return_address(void)
{
    return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static __attribute__((noinline)) void allocation_site(void)
{
    /* Every frame the recorder writes is a return address, the innermost
     * too: one just past return_address's first byte reads as a call made
     * from inside it. */
    stack_ips[0] = (uint64_t)(uintptr_t)&return_address + 1;
    stack_ips[1] = return_address(); call_line = __LINE__;
    stack_ips[2] = 0x10000100;  /* inside the module that has no file */
    stack_ips[3] = 0xdead;      /* inside no module */
}

typedef struct ids { uint32_t native, py, py_sibling, mark, type, fake_module; } ids;

static ids define_all(tf_writer *w, const self_module *me)
{
    static const uint8_t fake_id[4] = { 1, 2, 3, 4 };
    static const tf_segment fake_seg = { 0, 0x1000, 5 };
    ids d;
    tf_write_module_load(w, me->m.path, me->m.base, me->m.build_id, me->m.build_id_len,
                         me->m.segments, me->m.nsegments);
    d.fake_module = tf_write_module_load(w, "/nonexistent/libfake.so", 0x10000000, fake_id, 4, &fake_seg, 1);
    d.native = tf_write_native_stack(w, stack_ips, 4);
    uint32_t file = tf_write_string(w, "app.py", 6);
    uint32_t code1 = tf_write_py_code(w, file, tf_write_string(w, "train_step", 10), 10);
    uint32_t code2 = tf_write_py_code(w, file, tf_write_string(w, "<module>", 8), 1);
    tf_py_frame frames[2] = { { code1, 15 }, { code2, 40 } };
    d.py = tf_write_py_stack(w, frames, 2);
    frames[0].line = 16;        /* another line under the same caller: a push from its stack */
    d.py_sibling = tf_write_py_stack(w, frames, 2);
    d.mark = tf_write_string(w, "epoch \"1\"\n", 10);
    d.type = tf_write_string(w, "Tensor", 6);
    tf_write_thread(w, 1001, "main");
    tf_write_thread_names(w, 1002, "worker", "loader_0");
    tf_write_pool(w, 0, "cupy");
    tf_write_info(w, "python_version", "3.12.1");
    return d;
}

/* One event of each kind, some nested, spread over three frames. */
static uint64_t write_events(tf_writer *w, int fd, tf_chunk *chunk, const ids *d, long marks,
                             long random, long pool)
{
    uint64_t seq = 0, t = 1000000;
    tf_event e;
#define EV(k) (memset(&e, 0, sizeof e), e.kind = (k), e.seq = ++seq, e.t_ns = (t += 1500), \
               e.tid = 1001, e.native_stack = d->native, e.py_stack = d->py)
    EV(TF_EV_POOL_OP_BEGIN); e.u.pool_op = (typeof(e.u.pool_op)){ 0, TF_POOL_OP_ALLOC, 0, 4096 };
    uint64_t op = e.seq;
    tf_write_event(w, &e);
    EV(TF_EV_CUDA_ALLOC); e.parent = op;
    e.u.cuda = (typeof(e.u.cuda)){ TF_API_cudaMalloc, 0, 0, 0, 0x7f0000000000, 2 << 20, 0 };
    tf_write_event(w, &e);
    EV(TF_EV_POOL_SEGMENT); e.parent = op;
    e.u.segment = (typeof(e.u.segment)){ 0, TF_SEGMENT_GROW, 0x7f0000000000, 2 << 20 };
    tf_write_event(w, &e);
    EV(TF_EV_POOL_ALLOC); e.parent = op;
    e.u.pool = (typeof(e.u.pool)){ 0, 0x7f0000000000, 4000, 4096, 0 };
    tf_write_event(w, &e);
    EV(TF_EV_POOL_OP_END); e.u.pool_op = (typeof(e.u.pool_op)){ 0, TF_POOL_OP_ALLOC, op, 0 };
    tf_write_event(w, &e);
    flush(w, fd, chunk);
    EV(TF_EV_GC_START); e.tid = 1002; e.u.gc.generation = 2; e.u.gc.allocs[0] = 701;
    e.py_stack = d->py_sibling;
    uint64_t gc = e.seq;
    tf_write_event(w, &e);
    EV(TF_EV_POOL_FREE); e.tid = 1002; e.parent = gc; e.u.pool.ptr = 0x7f0000000000;
    tf_write_event(w, &e);
    EV(TF_EV_PY_FREE); e.tid = 1002; e.parent = gc; e.u.host.ptr = 0x5500002000; e.u.host.domain = TF_HOST_OBJ;
    tf_write_event(w, &e);
    for (int i = 0; i < 3; i++) {   /* 2.3: a run of frees, one PY_FREES record */
        EV(TF_EV_PY_FREE); e.tid = 1002; e.parent = gc; e.u.host.domain = TF_HOST_OBJ;
        e.u.host.ptr = 0x5500003000 - 0x40 * (uint64_t)i + (i == 2 ? 0x1000 : 0);
        if (!tf_write_py_free_joins(w, &e))
            tf_write_py_frees(w, &e);
    }
    EV(TF_EV_GC_STOP); e.tid = 1002; e.u.gc.generation = 2; e.u.gc.collected = 12;
    e.u.gc.duration_ns = 3000;
    tf_write_event(w, &e);
    EV(TF_EV_HOST_ALLOC); e.u.host = (typeof(e.u.host)){ TF_HOST_RAW, 0x5500001000, 1 << 20, TF_HOST_API_MALLOC };
    tf_write_event(w, &e);
    EV(TF_EV_HOST_FREE); e.u.host = (typeof(e.u.host)){ TF_HOST_RAW, 0x5500001000, 0, TF_HOST_API_FREE };
    tf_write_event(w, &e);
    EV(TF_EV_PY_ALLOC); e.u.host = (typeof(e.u.host)){ TF_HOST_OBJ, 0x5500002000, 64, 0 };
    tf_write_event(w, &e);
    for (int i = 0; i < 5; i++) {   /* 2.7: a run of allocations, one PY_ALLOCS record */
        EV(TF_EV_PY_ALLOC); e.t_ns -= i == 2 ? 1500 : 0; e.native_stack = 0;
        e.py_stack = i == 3 ? d->py_sibling : d->py;
        e.u.host = (typeof(e.u.host)){ TF_HOST_OBJ, 0x5500004000 + 0x40 * (uint64_t)i + (i == 4 ? 8 : 0),
                                       i == 1 ? 32 : 64, i == 3 ? TF_HOST_API_REALLOC : 0 };
        tf_write_py_allocs(w, &e);
    }
    EV(TF_EV_PY_DOUBLE_INIT); e.u.double_init.obj = 0x5500002010; e.u.double_init.type_name = d->type;
    tf_write_event(w, &e);
    EV(TF_EV_CUDA_FREE); e.u.cuda.api = TF_API_cuMemFree_v2; e.u.cuda.result = 1;
    e.u.cuda.device = -1; e.u.cuda.ptr = 0x7f0000000000;
    tf_write_event(w, &e);
    uint64_t refused = e.seq;
    EV(TF_EV_RELEASE_FAILED); e.u.release_failed.release = refused; e.u.release_failed.result = 1;
    tf_write_event(w, &e);
    flush(w, fd, chunk);
    for (long i = 0; i < marks; i++) {
        EV(TF_EV_MARK); e.u.mark.text = d->mark;
        tf_write_event(w, &e);
    }
    uint64_t rng = 2024;
    for (long i = 0; i < random; i++) {
        tf_test_random_event(&rng, ++seq, &e);
        tf_write_event(w, &e);
        if (i % 500 == 499)
            flush(w, fd, chunk);
    }
    if (pool > 0) {
        flush(w, fd, chunk);
        pool_stream ps;
        ps_init(&ps, w, 1, seq);
        ps.t = t;
        for (long i = 0; i < pool; i++) {
            ps_step(&ps, w);
            if (i % 1000 == 999)
                flush(w, fd, chunk);
        }
        seq = ps.seq;
        t = ps.t;
    }
    tf_write_module_unload(w, d->fake_module);  /* before END: trace-dump --json shows it */
    EV(TF_EV_END);
    tf_write_event(w, &e);
#undef EV
    return seq;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gen_log OUT [MARKS [RANDOM [POOL]]]\n");
        return 2;
    }
    long marks = argc > 2 ? atol(argv[2]) : 0, random = argc > 3 ? atol(argv[3]) : 0;
    long pool = argc > 4 ? atol(argv[4]) : 0;
    if (pool > 0 && !(enc = tf_colenc_new())) {
        fprintf(stderr, "gen_log: out of memory\n");
        return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 2;
    }
    self_module me;
    self_module_get(&me);
    allocation_site();
    tf_header h = { .pid = 4242, .ppid = 1, .wall_start_ns = 1700000000000000000ull,
                    .mono_start_ns = 1000000, .hostname = "gen-host",
                    .cmdline = "python app.py", .exe = "/usr/bin/python3",
                    .tracer_version = "test", .settings = "depth=4",
                    .cuda_runtime_version = 13000 };
    tf_writer *w = tf_writer_new(&h);
    tf_chunk chunk = { 0 };
    ids d = define_all(w, &me);
    uint64_t events = write_events(w, fd, &chunk, &d, marks, random, pool);
    flush(w, fd, &chunk);
    tf_writer_free(w);
    tf_chunk_free(&chunk);
    tf_colenc_free(enc);
    close(fd);
    printf("{\"events\":%llu,\"module\":\"%s\",\"function0\":\"return_address\","
           "\"function1\":\"allocation_site\",\"line1\":%d,\"file\":\"gen_log.c\"}\n",
           (unsigned long long)events, me.path, call_line);
    return 0;
}
