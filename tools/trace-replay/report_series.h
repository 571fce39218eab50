/*
 * report_series.h - memory over time at a bounded size.
 *
 * A chart needs a few thousand points whatever the length of the run.  The
 * series keeps time buckets of equal width, each holding the highest value
 * of every measure seen in it (so no peak disappears); when the buckets run
 * out, the width doubles and neighbours merge.
 */
#ifndef RP_REPORT_SERIES_H
#define RP_REPORT_SERIES_H

#include <stdint.h>

#define RPT_SERIES_MEASURES 3    /* reserved, allocated, host buffers */
#define RPT_SERIES_BUCKETS 2048

typedef struct rpt_point {
    uint64_t t_ns;               /* start of the bucket, since t0 */
    uint64_t v[RPT_SERIES_MEASURES];
} rpt_point;

typedef struct rpt_series {
    uint64_t t0, width;          /* width in ns, a power of two */
    rpt_point *p;                /* buckets in use, in time order */
    uint32_t n;
    uint64_t last[RPT_SERIES_MEASURES];
    int started;
} rpt_series;

void rpt_series_init(rpt_series *s);
void rpt_series_free(rpt_series *s);
/* The values from time t_ns (monotonic) on. */
void rpt_series_add(rpt_series *s, uint64_t t_ns, const uint64_t v[RPT_SERIES_MEASURES]);

#endif
