/* api_table.c - print the format's CUDA table, one row per line:
 * "n name event space layer ptsz", for test_api_table.py. */
#include <stdio.h>

#include "trace_format.h"

int main(void)
{
    for (uint32_t n = 1; n < TF_API_COUNT; n++) {
        const tf_api_info *a = tf_api(n);
        printf("%u %s %s %s %s %d\n", n, a->name, tf_kind_name(a->event), tf_space_name(a->space),
               a->layer == TF_LAYER_RUNTIME ? "runtime" : "driver", a->ptsz);
    }
    return 0;
}
