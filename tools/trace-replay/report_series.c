/* report_series.c - memory over time in a bounded number of buckets. */
#include "report_series.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void rpt_series_init(rpt_series *s)
{
    memset(s, 0, sizeof *s);
    s->width = 1024;
    s->p = rp_xcalloc(RPT_SERIES_BUCKETS, sizeof *s->p);
}

void rpt_series_free(rpt_series *s)
{
    free(s->p);
    memset(s, 0, sizeof *s);
}

static void keep_max(rpt_point *into, const uint64_t v[RPT_SERIES_MEASURES])
{
    for (int i = 0; i < RPT_SERIES_MEASURES; i++)
        if (v[i] > into->v[i])
            into->v[i] = v[i];
}

/* Double the bucket width: bucket k and k+1 of the old width become one. */
static void coarsen(rpt_series *s)
{
    uint32_t n = 0;
    s->width *= 2;
    for (uint32_t i = 0; i < s->n; i++) {
        uint64_t start = s->p[i].t_ns / s->width * s->width;
        if (n && s->p[n - 1].t_ns == start) {
            keep_max(&s->p[n - 1], s->p[i].v);
            continue;
        }
        s->p[n] = s->p[i];
        s->p[n++].t_ns = start;
    }
    s->n = n;
}

void rpt_series_add(rpt_series *s, uint64_t t_ns, const uint64_t v[RPT_SERIES_MEASURES])
{
    if (!s->started) {
        s->started = 1;
        s->t0 = t_ns;
    }
    uint64_t t = t_ns > s->t0 ? t_ns - s->t0 : 0;
    for (;;) {
        uint64_t start = t / s->width * s->width;
        if (s->n && s->p[s->n - 1].t_ns == start) {
            keep_max(&s->p[s->n - 1], v);
            break;
        }
        if (s->n < RPT_SERIES_BUCKETS) {
            /* A bucket opens with the value the previous one ended on, so a
             * level held across empty buckets stays drawn. */
            rpt_point *p = &s->p[s->n++];
            p->t_ns = start;
            memcpy(p->v, s->n > 1 ? s->last : v, sizeof p->v);
            keep_max(p, v);
            break;
        }
        coarsen(s);
    }
    memcpy(s->last, v, sizeof s->last);
}
