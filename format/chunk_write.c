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
#include <unistd.h>
#include <zstd.h>

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
