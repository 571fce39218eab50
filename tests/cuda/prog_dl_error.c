/*
 * prog_dl_error - a failure dlerror() has not reported yet stays the
 * program's across everything the tracer hooks.  glibc keeps one dlerror
 * state per thread, and every dlopen/dlsym/dlclose/dlinfo, the tracer's
 * own included, empties or replaces it.  So the program makes a dlopen
 * fail, then does one hooked thing on the same thread (a large host block,
 * a CUDA allocation through the runtime double, the same from a call site
 * seen before, a free, another thread's dlopen), then prints what dlerror()
 * says: the same traced as bare.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void fail_dlopen(void)
{
    if (dlopen("libprog_dl_error_absent.so", RTLD_NOW))
        abort();
}

static void say(const char *step)
{
    const char *e = dlerror();
    printf("%s: %s\n", step, e ? e : "(none)");
}

static void *other_thread(void *arg)
{
    (void)arg;
    void *m = dlopen("libm.so.6", RTLD_NOW);
    if (m)
        dlclose(m);
    return NULL;
}

/* One call site, reached twice: its first call looks the real function up. */
static __attribute__((noinline)) int device_alloc(void **p)
{
    return cudaMalloc(p, 1u << 20);
}

int main(void)
{
    /* The runtime's start opens the driver (a dl call of its own): before. */
    void *warm = NULL;
    if (cudaMalloc(&warm, 4096) || cudaFree(warm))
        return 1;

    fail_dlopen();
    say("nothing");

    fail_dlopen();
    void *m = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED)
        munmap(m, 2u << 20);
    say("host mmap");

    fail_dlopen();
    char *volatile b = malloc(4u << 20);
    if (b)
        memset(b, 1, 4096);
    free(b);
    say("host malloc");

    void *d = NULL;
    fail_dlopen();
    int rc = device_alloc(&d);
    say("cudaMalloc, a new call site");

    fail_dlopen();
    rc |= cudaFree(d);
    say("cudaFree");

    fail_dlopen();
    rc |= device_alloc(&d);
    say("cudaMalloc, a known call site");
    rc |= cudaFree(d);

    fail_dlopen();
    pthread_t t;
    if (pthread_create(&t, NULL, other_thread, NULL) == 0)
        pthread_join(t, NULL);
    say("another thread's dlopen");
    return rc != 0;
}
