/*
 * gpu_native.c - a CUDA C program for scripts/gpu-check, on a real GPU (no
 * test double).  Built twice by `gpu-check --prepare`: with the static
 * runtime (nvcc's default: libtrace.so sees the driver calls beneath it) and
 * with libcudart.so.13 (it sees the runtime calls).  Between the marks
 * "gpu-check:start" and "gpu-check:end", four threads allocate and free
 * device memory at once, plainly and stream-ordered, so that addresses come
 * back to other threads; then one of each other kind.  Prints, as JSON, how
 * many device allocations and frees succeeded, for the log to be compared.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#define THREADS 4
#define PAIRS 150

static atomic_int allocs, frees, failed;

static void mark(const char *text)
{
    void (*fn)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "trace_mark");
    if (fn)
        fn(text);
}

static void count(cudaError_t r, atomic_int *what)
{
    if (r == cudaSuccess)
        atomic_fetch_add(what, 1);
    else
        atomic_fetch_add(&failed, 1);
}

static void *worker(void *arg)
{
    unsigned long id = (unsigned long)arg;
    cudaStream_t stream;
    if (cudaStreamCreate(&stream) != cudaSuccess) {
        atomic_fetch_add(&failed, 1);
        return NULL;
    }
    for (unsigned long i = 0; i < PAIRS; i++) {
        size_t size = 1 + (i * 7919 + id * 104729) % (8u << 20);
        void *p = NULL;
        cudaError_t r = cudaMalloc(&p, size);
        count(r, &allocs);
        if (r == cudaSuccess)
            count(cudaFree(p), &frees);
        p = NULL;
        r = cudaMallocAsync(&p, size, stream);
        count(r, &allocs);
        if (r == cudaSuccess)
            count(cudaFreeAsync(p, stream), &frees);
    }
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    return NULL;
}

int main(void)
{
    if (cudaFree(0) != cudaSuccess) {      /* the context, before the marks */
        fprintf(stderr, "gpu_native: no CUDA device\n");
        return 1;
    }
    mark("gpu-check:start");
    pthread_t t[THREADS];
    for (unsigned long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    void *p = NULL;
    size_t pitch = 0;
    cudaError_t r = cudaMallocManaged(&p, 1 << 16, cudaMemAttachGlobal);
    count(r, &allocs);
    if (r == cudaSuccess)
        count(cudaFree(p), &frees);
    p = NULL;
    r = cudaMallocPitch(&p, &pitch, 1000, 100);
    count(r, &allocs);
    if (r == cudaSuccess)
        count(cudaFree(p), &frees);
    cudaDeviceSynchronize();
    mark("gpu-check:end");
    printf("{\"allocs\": %d, \"frees\": %d, \"failed\": %d, \"threads\": %d}\n", atomic_load(&allocs),
           atomic_load(&frees), atomic_load(&failed), THREADS);
    return 0;
}
