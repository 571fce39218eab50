/*
 * line_check.c - preload/python_lines.c against CPython's own answers.
 *
 *     line_check FILE
 *
 * FILE (written by test_lines.py inside the interpreter under test): "PYLINES1", the
 * table format (one byte), then per code object its first line (i32), its
 * table (u32 size, the bytes) and its offsets (u32 count, then pairs of
 * i32: the offset, PyCode_Addr2Line's answer there), all little-endian.
 * Each code object's offsets are asked for in four orders (ascending, descending,
 * pseudo-random, and each with a cursor of its own), one cursor per order,
 * so that every way a cursor can be left is met.  Each table is also read
 * cut short, from a buffer of its own: no answer is expected there, but
 * under the sanitizers (scripts/test --sanitize) a read past the end fails.
 * Prints the mismatches (the first 20) and exits 1 if there was any.
 */
#include "python_lines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long mismatches, asked;

static int read_all(FILE *f, void *buf, size_t n)
{
    return fread(buf, 1, n, f) == n;
}

static void check(const char *order, uint32_t code, int format, const uint8_t *table, uint32_t size,
                  int first, int where, int expected, py_line_cursor *cursor)
{
    int got = py_line_find(format, table, size, first, where, cursor);
    asked++;
    if (got == expected)
        return;
    if (mismatches++ < 20)
        printf("code object %u (first line %d, table %u bytes), %s: offset %d: line %d, CPython %d\n",
               code, first, size, order, where, got, expected);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: line_check FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    char magic[8];
    uint8_t format;
    if (!f || !read_all(f, magic, 8) || memcmp(magic, "PYLINES1", 8) != 0 || !read_all(f, &format, 1)) {
        fprintf(stderr, "line_check: %s is not a PYLINES1 file\n", argv[1]);
        return 2;
    }
    uint32_t codes = 0;
    int32_t first;
    while (read_all(f, &first, 4)) {
        uint32_t size, n;
        if (!read_all(f, &size, 4))
            return 2;
        uint8_t *table = malloc(size ? size : 1);
        if (!table || !read_all(f, table, size) || !read_all(f, &n, 4))
            return 2;
        int32_t *pairs = malloc(n ? (size_t)n * 8 : 8);
        if (!pairs || !read_all(f, pairs, (size_t)n * 8))
            return 2;
        py_line_cursor up = PY_LINE_CURSOR_NEW, down = PY_LINE_CURSOR_NEW, mixed = PY_LINE_CURSOR_NEW;
        for (uint32_t i = 0; i < n; i++)
            check("ascending", codes, format, table, size, first, pairs[2 * i], pairs[2 * i + 1], &up);
        for (uint32_t i = n; i-- > 0;)
            check("descending", codes, format, table, size, first, pairs[2 * i], pairs[2 * i + 1], &down);
        uint64_t state = 0x9E3779B97F4A7C15ull ^ codes;
        for (uint32_t i = 0; n && i < n; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t k = (uint32_t)(state >> 33) % n;
            check("pseudo-random", codes, format, table, size, first, pairs[2 * k], pairs[2 * k + 1], &mixed);
        }
        for (uint32_t i = 0; i < n; i++) {
            py_line_cursor fresh = PY_LINE_CURSOR_NEW;
            check("fresh cursor", codes, format, table, size, first, pairs[2 * i], pairs[2 * i + 1], &fresh);
        }
        for (uint32_t cut = size / 2; n && cut < size; cut += (size - cut + 1) / 2) {
            uint8_t *part = malloc(cut ? cut : 1);
            if (!part)
                return 2;
            memcpy(part, table, cut);
            py_line_cursor c = PY_LINE_CURSOR_NEW;
            for (uint32_t i = 0; i < n; i++)
                (void)py_line_find(format, part, cut, first, pairs[2 * i], &c);
            free(part);
        }
        free(table);
        free(pairs);
        codes++;
    }
    printf("format %u: %u code objects, %ld look-ups, %ld mismatches\n", format, codes, asked, mismatches);
    return mismatches || !codes ? 1 : 0;
}
