/*
 * embed_round.h - the Python code each round of the embedding fixtures runs
 * (embed_rounds.c, embed_dlopen.c): a 3 MiB bytearray kept in a cycle until
 * gc.collect() frees it, so the test sees the collection and the buffer it
 * frees in every round.
 */
#ifndef EMBED_ROUND_H
#define EMBED_ROUND_H

static const char *round_code =
    "import gc\n"
    "b = bytearray(3 << 20)\n"
    "holder = [b]\n"
    "holder.append(holder)\n"
    "del b, holder\n"
    "gc.collect()\n";

#endif
