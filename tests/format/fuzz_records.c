/*
 * fuzz_records.c - libFuzzer target: the reader on arbitrary *records*.
 *
 * The reader's fuzzer (fuzz_reader.c) mutates whole logs, so nearly every
 * mutation lands in compressed bytes and the frame fails zstd's checksum
 * before one record of it is parsed: the record layer (definitions, the
 * delta bases, event kinds such as py_frees that carry runs of events) is
 * reached only as the seeds hold it.  Here the input is what the frames
 * decompress to, pieces separated by SPLIT; each piece is compressed into a
 * frame of its own, with its checksum, and the frames make the log the
 * reader opens.  So every mutation is a record-level one: a cut field, a
 * wrong length, a base moved, a run of frees that ends badly, a FRAME out
 * of place.  What must hold is the reader's: no read past its input, no
 * unbounded allocation, every event it returns with its look-ups answered.
 *
 * The seeds (corpus_records/) are real logs' frames so split; make them
 * from a log with `fuzz_records --split LOG OUT` (this file's own mode).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "fuzz_read_all.h"
#include "trace_format.h"

/* Between two pieces: eight bytes no seed's records hold (the seeds are
 * made with it, so they would be cut wrongly otherwise). */
static const uint8_t SPLIT[8] = { 0xfe, 0xed, 0xfa, 0xce, 0x53, 0x50, 0x4c, 0x54 };

static const uint8_t *find_split(const uint8_t *p, const uint8_t *end)
{
    for (; end - p >= (ptrdiff_t)sizeof SPLIT; p++)
        if (p[0] == SPLIT[0] && memcmp(p, SPLIT, sizeof SPLIT) == 0)
            return p;
    return end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    /* Each piece's frame is at most its bound; the pieces are at most size. */
    size_t cap = 0, pieces = 0;
    for (const uint8_t *p = data, *end = data + size;; pieces++) {
        const uint8_t *s = find_split(p, end);
        cap += ZSTD_compressBound((size_t)(s - p));
        if (s == end)
            break;
        p = s + sizeof SPLIT;
    }
    if (pieces > 256)
        return 0;
    uint8_t *log = malloc(cap);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    if (!log || !cctx) {
        free(log);
        ZSTD_freeCCtx(cctx);
        return 0;
    }
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    size_t len = 0;
    for (const uint8_t *p = data, *end = data + size;;) {
        const uint8_t *s = find_split(p, end);
        size_t n = ZSTD_compress2(cctx, log + len, cap - len, p, (size_t)(s - p));
        if (ZSTD_isError(n))
            abort();    /* cap holds every piece's bound */
        len += n;
        if (s == end)
            break;
        p = s + sizeof SPLIT;
    }
    ZSTD_freeCCtx(cctx);

    char err[256];
    tf_reader *r = tf_reader_open_mem(log, len, err, sizeof err);
    if (r)
        fuzz_read_all(r);
    free(log);
    return 0;
}

/* `fuzz_records --split LOG OUT`: a seed from a log, its frames
 * decompressed and joined with SPLIT (skippable frames left out).  Any
 * other arguments are libFuzzer's. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (*argc != 4 || strcmp((*argv)[1], "--split") != 0)
        return 0;
    FILE *in = fopen((*argv)[2], "rb"), *out = fopen((*argv)[3], "wb");
    if (!in || !out) {
        perror("fuzz_records --split");
        exit(2);
    }
    static uint8_t buf[64u << 20], plain[64u << 20];
    size_t n = fread(buf, 1, sizeof buf, in), off = 0;
    int first = 1;
    while (off < n) {
        size_t fl = ZSTD_findFrameCompressedSize(buf + off, n - off);
        if (ZSTD_isError(fl))
            break;
        /* a skippable frame: magic 0x184D2A50 to 0x184D2A5F */
        int skippable = fl >= 4 && (buf[off] & 0xf0) == 0x50 && buf[off + 1] == 0x2a &&
                        buf[off + 2] == 0x4d && buf[off + 3] == 0x18;
        if (!skippable) {
            size_t m = ZSTD_decompress(plain, sizeof plain, buf + off, fl);
            if (ZSTD_isError(m))
                break;
            if (!first)
                fwrite(SPLIT, 1, sizeof SPLIT, out);
            if (memmem(plain, m, SPLIT, sizeof SPLIT)) {
                fprintf(stderr, "fuzz_records --split: a frame holds the separator\n");
                exit(1);
            }
            fwrite(plain, 1, m, out);
            first = 0;
        }
        off += fl;
    }
    fclose(in);
    if (fclose(out) != 0) {
        perror("fuzz_records --split");
        exit(2);
    }
    exit(first ? 1 : 0);
}
