/*
 * zstd_trace.c - zstd's tracing hooks, answered "no tracing" here.
 *
 * libzstd calls ZSTD_trace_compress_begin/_end when something defines them
 * (weak references: zstd's own command-line tool does, to time its
 * frames).  With libzstd.a linked into libtrace.so, those references stay
 * undefined in our dynamic symbol table, and the first object of the
 * process that defines them, the program's, would be handed our
 * compression contexts.  Defined here (local to libtrace.so), they are
 * ours: begin says no trace, so end is never called.  The declarations
 * are zstd's lib/common/zstd_trace.h, which is not installed.
 */
#include <stddef.h>

typedef unsigned long long ZSTD_TraceCtx;
struct ZSTD_CCtx_s;
struct ZSTD_Trace;

ZSTD_TraceCtx ZSTD_trace_compress_begin(struct ZSTD_CCtx_s const *cctx)
    __attribute__((visibility("hidden")));
void ZSTD_trace_compress_end(ZSTD_TraceCtx ctx, struct ZSTD_Trace const *trace)
    __attribute__((visibility("hidden")));

ZSTD_TraceCtx ZSTD_trace_compress_begin(struct ZSTD_CCtx_s const *cctx)
{
    (void)cctx;
    return 0;
}

void ZSTD_trace_compress_end(ZSTD_TraceCtx ctx, struct ZSTD_Trace const *trace)
{
    (void)ctx;
    (void)trace;
}
