/*
 * segments.c - the names of a log's segment files (FORMAT.md section 13).
 *
 * Segment 0 is the log's own path; segment k >= 1 has ".segK" before the
 * extension of the path's last component (trace-1234.tlog ->
 * trace-1234.seg3.tlog), or at its end when it has none.  The recorder
 * builds these names inside the traced process, at times in a signal
 * handler: nothing here allocates or formats through stdio.
 */
#include <string.h>

#include "trace_format.h"

/* Where the extension of path's last component starts (its '.'), or the
 * end of path when it has none.  A leading dot (".hidden") is no extension. */
static size_t ext_at(const char *path)
{
    size_t n = strlen(path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? (size_t)(dot - path) : n;
}

static size_t put_number(char *out, uint32_t v)
{
    char digits[10];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = digits[n - 1 - i];
    return n;
}

int tf_segment_path(char *out, size_t cap, const char *log_path, uint32_t k)
{
    size_t n = strlen(log_path);
    if (k == 0) {
        if (n + 1 > cap)
            return -1;
        memcpy(out, log_path, n + 1);
        return 0;
    }
    size_t at = ext_at(log_path);
    char mid[16] = ".seg";
    size_t m = 4 + put_number(mid + 4, k);
    if (n + m + 1 > cap)
        return -1;
    memcpy(out, log_path, at);
    memcpy(out + at, mid, m);
    memcpy(out + at + m, log_path + at, n - at + 1);
    return 0;
}

int tf_segment_log_path(char *out, size_t cap, const char *seg_path, uint32_t k)
{
    if (k == 0)
        return tf_segment_path(out, cap, seg_path, 0);
    size_t n = strlen(seg_path), at = ext_at(seg_path);
    char mid[16] = ".seg";
    size_t m = 4 + put_number(mid + 4, k);
    if (n >= m && !memcmp(seg_path + n - m, mid, m))
        at = n;   /* the log's name had no extension: ".segK" ends it */
    if (at < m || memcmp(seg_path + at - m, mid, m) != 0 || n - m + 1 > cap)
        return -1;
    memcpy(out, seg_path, at - m);
    memcpy(out + at - m, seg_path + at, n - at + 1);
    return 0;
}

uint32_t tf_segment_number(const char *name, const char *log_path)
{
    /* Compare last components: name is a directory entry. */
    const char *base = strrchr(log_path, '/');
    base = base ? base + 1 : log_path;
    size_t n = strlen(base), at = ext_at(base);
    if (strncmp(name, base, at) != 0 || strncmp(name + at, ".seg", 4) != 0)
        return 0;
    const char *p = name + at + 4;
    uint64_t k = 0;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 10) {
        k = k * 10 + (uint64_t)(*p++ - '0');
        digits++;
    }
    if (!digits || k == 0 || k > UINT32_MAX || name[at + 4] == '0' || strcmp(p, base + at) != 0)
        return 0;
    (void)n;
    return (uint32_t)k;
}
