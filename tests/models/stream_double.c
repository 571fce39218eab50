/*
 * stream_double.c - the C side of the fake cupy.cuda.stream: the current
 * stream per thread, and the per-thread default stream (cudaStreamPerThread,
 * 0x2) when CUPY_CUDA_PER_THREAD_DEFAULT_STREAM is on, as CuPy's
 * get_current_stream_ptr answers.  Exported to Python in a capsule.
 */
#include <stdint.h>

static __thread uint64_t current;
static int per_thread_default;

uint64_t fake_stream_get(void)
{
    return current ? current : per_thread_default ? 2 : 0;
}

void fake_stream_set(uint64_t stream) { current = stream; }
void fake_stream_per_thread_default(int on) { per_thread_default = on; }
