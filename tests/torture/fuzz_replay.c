/*
 * fuzz_replay.c - libFuzzer target: arbitrary bytes, read as a log, driven
 * through trace-replay's core the way its commands drive it.
 *
 * Bytes that are not zstd frames are also wrapped into one checksummed
 * frame first, so mutations of decompressed records (the corpus holds
 * both forms) reach the record decoder and the replay instead of stopping
 * at a checksum.
 *
 * Each input is replayed model-free, with the model chosen by pool name,
 * and with every model forced on every pool (paranoid: a full audit after
 * each operation); then explore runs over the first events.  A violation
 * is a normal outcome; a crash, a sanitizer report or a leak is a finding.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "explore.h"
#include "replay.h"
#include "source.h"
#include "trace_format.h"

#include <zstd.h>

/* explore replays the log once per re-entrancy point: keep it short. */
#define EXPLORE_MAX_EVENTS 2048

static const char *pool_name(void *ctx, uint32_t pool)
{
    return tf_reader_pool_name(ctx, pool);
}

static rp_options options(tf_reader *r, const rp_model_ops *model, int model_auto)
{
    rp_options o = { 0 };
    o.model = model;
    o.model_auto = model_auto;
    o.paranoid = model != NULL;
    o.pool_name = pool_name;
    o.pool_name_ctx = r;
    return o;
}

static void check(const uint8_t *data, size_t size, const rp_model_ops *model, int model_auto)
{
    char err[256];
    tf_reader *r = tf_reader_open_mem(data, size, err, sizeof err);
    if (!r)
        return;
    rp_options o = options(r, model, model_auto);
    rp_replay *rp = rp_replay_new(&o);
    tf_event e;
    while (tf_reader_next(r, &e))
        if (rp_replay_event(rp, &e))
            break;
    rp_replay_finish(rp, tf_reader_status(r)->clean_end);
    const rp_finding *warnings;
    uint64_t total;
    rp_replay_warnings(rp, &warnings, &total);
    rp_replay_free(rp);
    tf_reader_close(r);
}

static void explore(const uint8_t *data, size_t size)
{
    char err[256];
    tf_reader *r = tf_reader_open_mem(data, size, err, sizeof err);
    if (!r)
        return;
    tf_event *events = malloc(EXPLORE_MAX_EVENTS * sizeof *events);
    size_t n = 0;
    while (events && n < EXPLORE_MAX_EVENTS && tf_reader_next(r, &events[n]))
        n++;
    rp_source src;
    rp_source_array(&src, events, n, tf_reader_status(r)->clean_end);
    rp_options o = options(r, NULL, 1);
    rp_explore_result x;
    rp_replay *rp = rp_explore(&o, &src, &x);
    if (rp)
        rp_replay_free(rp);
    rp_source_close(&src);
    free(events);
    tf_reader_close(r);
}

static void replay_every_way(const uint8_t *data, size_t size)
{
    check(data, size, NULL, 0);
    check(data, size, NULL, 1);
    for (int i = 0; rp_models[i]; i++)
        check(data, size, rp_models[i], 0);
    explore(data, size);
}

static int is_zstd_frame(const uint8_t *data, size_t size)
{
    return size >= 4 && data[0] == 0x28 && data[1] == 0xb5 && data[2] == 0x2f && data[3] == 0xfd;
}

/* data as one checksummed zstd frame (malloc'd; NULL on failure). */
static uint8_t *as_frame(const uint8_t *data, size_t size, size_t *framed)
{
    size_t cap = ZSTD_compressBound(size);
    uint8_t *out = malloc(cap);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    if (out && c) {
        ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
        *framed = ZSTD_compress2(c, out, cap, data, size);
    }
    ZSTD_freeCCtx(c);
    if (out && ZSTD_isError(*framed)) {
        free(out);
        out = NULL;
    }
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    replay_every_way(data, size);
    if (is_zstd_frame(data, size))
        return 0;
    size_t framed = 0;
    uint8_t *frame = as_frame(data, size, &framed);
    if (frame)
        replay_every_way(frame, framed);
    free(frame);
    return 0;
}
