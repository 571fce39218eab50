/*
 * chunk_write.c - compress a sealed chunk into one zstd frame and write it.
 *
 * The frame carries a content checksum, which is how the reader tells a
 * damaged frame from a good one.  Output goes through a small stack buffer
 * with the streaming API rather than one ZSTD_compress2 call into a heap
 * buffer: the recorder also flushes from fatal-signal handlers, where malloc
 * is off limits, and with a caller-kept context nothing here allocates.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <zstd.h>

#include "columns.h"
#include "trace_format.h"

#define OUT_BUF 16384

int tf_write_all(int fd, const void *data, size_t n)
{
    const uint8_t *p = data;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int compress_to_fd(int fd, const tf_chunk *c, ZSTD_CCtx *cctx, int level)
{
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cctx, c->len)))
        return -EINVAL;
    uint8_t buf[OUT_BUF];
    ZSTD_inBuffer in = { c->data, c->len, 0 };
    for (;;) {
        ZSTD_outBuffer out = { buf, sizeof buf, 0 };
        size_t left = ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_end);
        if (ZSTD_isError(left))
            return -EIO;
        int rc = tf_write_all(fd, buf, out.pos);
        if (rc < 0 || left == 0)
            return rc;
    }
}

size_t tf_chunk_bound(const tf_chunk *c)
{
    return ZSTD_compressBound(c->len);
}

size_t tf_chunk_compress(const tf_chunk *c, void *cctx, int level, void *out, size_t cap)
{
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)))
        return 0;
    size_t n = ZSTD_compress2(cctx, out, cap, c->data, c->len);
    return ZSTD_isError(n) ? 0 : n;
}

/* The encoded block, piece by piece, into one frame: the block is never
 * copied into one buffer. */
static size_t compress_block(const tf_colenc *enc, ZSTD_CCtx *cctx, int level, void *out, size_t cap)
{
    const void *data[TF_COLUMNS + 1];
    size_t len[TF_COLUMNS + 1];
    int n = tf_colenc_pieces(enc, data, len);
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(cctx, tf_colenc_size(enc))))
        return 0;
    ZSTD_outBuffer o = { out, cap, 0 };
    for (int i = 0; i < n; i++) {
        ZSTD_inBuffer in = { data[i], len[i], 0 };
        ZSTD_EndDirective end = i == n - 1 ? ZSTD_e_end : ZSTD_e_continue;
        for (;;) {
            size_t left = ZSTD_compressStream2(cctx, &o, &in, end);
            if (ZSTD_isError(left) || (o.pos == o.size && (left || in.pos < in.size)))
                return 0;
            if (end == ZSTD_e_end ? left == 0 : in.pos == in.size)
                break;
        }
    }
    return o.pos;
}

size_t tf_chunk_compress_columns(const tf_chunk *c, tf_colenc *enc, uint64_t tunit, void *cctx,
                                 int level, void *out, size_t cap)
{
    if (enc && c->len && tf_columns_encode(enc, c->data, c->len, tunit) == 0) {
        size_t n = compress_block(enc, cctx, level, out, cap);
        if (n)
            return n;
    }
    return tf_chunk_compress(c, cctx, level, out, cap);
}

int tf_chunk_write_columns(int fd, const tf_chunk *c, tf_colenc *enc, uint64_t tunit, void *cctx,
                           int level)
{
    if (!enc || c->len == 0)
        return tf_chunk_write(fd, c, cctx, level);
    ZSTD_CCtx *own = cctx ? NULL : ZSTD_createCCtx();
    size_t cap = tf_chunk_bound(c);
    uint8_t *out = malloc(cap);
    int rc = -ENOMEM;
    if ((cctx || own) && out) {
        size_t n = tf_chunk_compress_columns(c, enc, tunit, cctx ? cctx : own, level, out, cap);
        rc = n ? tf_write_all(fd, out, n) : -EIO;
    }
    free(out);
    ZSTD_freeCCtx(own);
    return rc;
}

int tf_chunk_write(int fd, const tf_chunk *c, void *cctx, int level)
{
    if (c->len == 0)
        return 0;
    if (cctx)
        return compress_to_fd(fd, c, cctx, level);
    ZSTD_CCtx *own = ZSTD_createCCtx();
    if (!own)
        return -ENOMEM;
    int rc = compress_to_fd(fd, c, own, level);
    ZSTD_freeCCtx(own);
    return rc;
}
