/*
 * foreign_zstd.c - a stand-in for a foreign libzstd.so.1: an old one's
 * simple API (ZSTD_compress, ZSTD_isError, ZSTD_versionNumber), none of the
 * advanced one the tracer's writer calls (ZSTD_CCtx_setParameter,
 * ZSTD_compressStream2).  preload.foreign_libs puts it first on
 * LD_LIBRARY_PATH and has the program load it.
 */
#include <stddef.h>
#include <string.h>

unsigned ZSTD_versionNumber(void);
unsigned ZSTD_isError(size_t code);
size_t ZSTD_compressBound(size_t n);
size_t ZSTD_compress(void *dst, size_t cap, const void *src, size_t n, int level);
int foreign_zstd_marker(void);

unsigned ZSTD_versionNumber(void)
{
    return 10308;   /* 1.3.8 */
}

unsigned ZSTD_isError(size_t code)
{
    return code > (size_t)-120;
}

size_t ZSTD_compressBound(size_t n)
{
    return n + 64;
}

/* Not compression: a copy, enough for a caller that checks the size. */
size_t ZSTD_compress(void *dst, size_t cap, const void *src, size_t n, int level)
{
    (void)level;
    if (cap < n)
        return (size_t)-70;   /* dstSize_tooSmall */
    memcpy(dst, src, n);
    return n;
}

int foreign_zstd_marker(void)
{
    return 1;
}
