/* evtext.c - parse the test scenario language (see evtext.h). */
#include "evtext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct open_frame { uint64_t seq, parent; uint32_t kind; } open_frame;
typedef struct tstate { uint32_t tid; open_frame st[64]; int n; } tstate;

static int num(const char *s, uint64_t *v)
{
    char *end;
    if (!s)
        return -1;
    *v = strtoull(s, &end, 0);
    switch (*end) {
    case 'k': *v <<= 10; end++; break;
    case 'M': *v <<= 20; end++; break;
    case 'G': *v <<= 30; end++; break;
    default: break;
    }
    return *end ? -1 : 0;
}

static tstate *thread(tstate *ts, int *nts, uint32_t tid)
{
    for (int i = 0; i < *nts; i++)
        if (ts[i].tid == tid)
            return &ts[i];
    if (*nts == 16)
        return NULL;
    memset(&ts[*nts], 0, sizeof *ts);
    ts[*nts].tid = tid;
    return &ts[(*nts)++];
}

/* A host api by its name (FORMAT.md section 7: "mmap", "munmap", "map_rest"...). */
static int host_api(const char *w, uint32_t *api)
{
    for (uint32_t i = 1; i < TF_HOST_API_COUNT; i++)
        if (!strcmp(w, tf_host_api_name(i))) {
            *api = i;
            return 0;
        }
    return -1;
}

static int parse_line(char **w, int nw, tf_event *e, tstate *t, evtext *out, uint64_t *stack, uint32_t *nstack)
{
    uint64_t a = 0, b = 0, c = 0, d = 0;
    const char *k = w[0];
    int opens = 0;
    e->parent = t->n ? t->st[t->n - 1].seq : 0;
    if (!strcmp(k, "pool") && nw == 3 && out->npools < 16 && !num(w[1], &a)) {
        out->pools[out->npools].id = (uint32_t)a;
        snprintf(out->pools[out->npools++].name, 64, "%s", w[2]);
        return 0;
    }
    if (!strcmp(k, "stack")) {
        for (*nstack = 0; *nstack < 16 && (int)*nstack + 1 < nw; (*nstack)++)
            if (num(w[*nstack + 1], &stack[*nstack]))
                return -1;
        return 0;
    }
    if (!strcmp(k, "endlog")) {
        out->has_end = 1;
        return 0;
    }
    if (!strcmp(k, "op") && nw == 4 && !num(w[2], &a) && !num(w[3], &b)) {
        e->kind = TF_EV_POOL_OP_BEGIN;
        e->u.pool_op.op = !strcmp(w[1], "alloc") ? TF_POOL_OP_ALLOC : !strcmp(w[1], "free") ? TF_POOL_OP_FREE
                                                                                          : TF_POOL_OP_OTHER;
        e->u.pool_op.pool = (uint32_t)a;
        e->u.pool_op.arg = b;
        opens = 1;
    } else if (!strcmp(k, "end") && nw == 1 && t->n && t->st[t->n - 1].kind == TF_EV_POOL_OP_BEGIN) {
        e->kind = TF_EV_POOL_OP_END;
        e->u.pool_op.begin = t->st[t->n - 1].seq;
        e->parent = t->st[t->n - 1].parent;
        t->n--;
    } else if (!strcmp(k, "gc") && nw <= 2) {
        e->kind = TF_EV_GC_START;
        if (nw == 2 && num(w[1], &a))
            return -1;
        e->u.gc.generation = (int32_t)a;
        opens = 1;
    } else if (!strcmp(k, "gcend") && nw == 1 && t->n && t->st[t->n - 1].kind == TF_EV_GC_START) {
        e->kind = TF_EV_GC_STOP;
        e->parent = t->st[t->n - 1].parent;
        t->n--;
    } else if (!strcmp(k, "alloc") && nw >= 4 && nw <= 6 && !num(w[1], &a) && !num(w[2], &b) && !num(w[3], &c)) {
        e->kind = TF_EV_POOL_ALLOC;
        e->u.pool.pool = (uint32_t)a;
        e->u.pool.ptr = b;
        e->u.pool.requested = c;
        e->u.pool.granted = nw >= 5 && !num(w[4], &d) ? d : c;
        if (nw == 6 && num(w[5], &e->u.pool.stream))
            return -1;
    } else if (!strcmp(k, "free") && nw >= 3 && nw <= 4 && !num(w[1], &a) && !num(w[2], &b)) {
        e->kind = TF_EV_POOL_FREE;
        e->u.pool.pool = (uint32_t)a;
        e->u.pool.ptr = b;
        if (nw == 4 && num(w[3], &e->u.pool.granted))
            return -1;
    } else if (!strcmp(k, "cuda_alloc") && nw >= 3 && nw <= 4 && !num(w[1], &a) && !num(w[2], &b)) {
        e->kind = TF_EV_CUDA_ALLOC;
        e->u.cuda.api = TF_API_cudaMalloc;
        e->u.cuda.ptr = a;
        e->u.cuda.size = b;
        if (nw == 4 && num(w[3], &c))
            return -1;
        e->u.cuda.result = (int32_t)c;
    } else if (!strcmp(k, "cuda_free") && nw == 2 && !num(w[1], &a)) {
        e->kind = TF_EV_CUDA_FREE;
        e->u.cuda.api = TF_API_cudaFree;
        e->u.cuda.ptr = a;
    } else if (!strcmp(k, "cuda_alloc_dev") && nw == 4 && !num(w[1], &a) && !num(w[2], &b) && !num(w[3], &c)) {
        e->kind = TF_EV_CUDA_ALLOC;
        e->u.cuda.api = TF_API_cudaMalloc;
        e->u.cuda.device = (int32_t)a;
        e->u.cuda.ptr = b;
        e->u.cuda.size = c;
    } else if (!strcmp(k, "pinned_alloc") && nw == 3 && !num(w[1], &a) && !num(w[2], &b)) {
        e->kind = TF_EV_CUDA_ALLOC;
        e->u.cuda.api = TF_API_cudaMallocHost;
        e->u.cuda.ptr = a;
        e->u.cuda.size = b;
    } else if (!strcmp(k, "pinned_free") && nw == 2 && !num(w[1], &a)) {
        e->kind = TF_EV_CUDA_FREE;
        e->u.cuda.api = TF_API_cudaFreeHost;
        e->u.cuda.ptr = a;
    } else if (!strcmp(k, "reset") && nw == 2 && !num(w[1], &a)) {
        e->kind = TF_EV_CUDA_FREE;
        e->u.cuda.api = TF_API_cudaDeviceReset;
        e->u.cuda.device = (int32_t)a;
    } else if (!strcmp(k, "vmm_create") && nw == 3 && !num(w[1], &a) && !num(w[2], &b)) {
        e->kind = TF_EV_CUDA_ALLOC;
        e->u.cuda.api = TF_API_cuMemCreate;
        e->u.cuda.ptr = a;
        e->u.cuda.size = b;
    } else if (!strcmp(k, "vmm_release") && nw == 2 && !num(w[1], &a)) {
        e->kind = TF_EV_CUDA_FREE;
        e->u.cuda.api = TF_API_cuMemRelease;
        e->u.cuda.ptr = a;
    } else if (!strcmp(k, "va_reserve") && nw == 3 && !num(w[1], &a) && !num(w[2], &b)) {
        e->kind = TF_EV_CUDA_ALLOC;
        e->u.cuda.api = TF_API_cuMemAddressReserve;
        e->u.cuda.ptr = a;
        e->u.cuda.size = b;
    } else if (!strcmp(k, "va_free") && nw == 2 && !num(w[1], &a)) {
        e->kind = TF_EV_CUDA_FREE;
        e->u.cuda.api = TF_API_cuMemAddressFree;
        e->u.cuda.ptr = a;
    } else if (!strcmp(k, "segment") && nw == 5 && !num(w[2], &a) && !num(w[3], &b) && !num(w[4], &c)) {
        e->kind = TF_EV_POOL_SEGMENT;
        e->u.segment.grow = !strcmp(w[1], "grow") ? TF_SEGMENT_GROW : TF_SEGMENT_RELEASE;
        e->u.segment.pool = (uint32_t)a;
        e->u.segment.ptr = b;
        e->u.segment.size = c;
    } else if (!strcmp(k, "host_alloc") && (nw == 3 || nw == 4) && !num(w[1], &a) && !num(w[2], &b)) {
        e->kind = TF_EV_HOST_ALLOC;
        e->u.host.ptr = a;
        e->u.host.size = b;
        if (nw == 4 && host_api(w[3], &e->u.host.api))
            return -1;
    } else if (!strcmp(k, "host_free") && (nw == 2 || nw == 3) && !num(w[1], &a)) {
        e->kind = TF_EV_HOST_FREE;
        e->u.host.ptr = a;
        if (nw == 3 && host_api(w[2], &e->u.host.api))
            return -1;
    } else if (!strcmp(k, "release_failed") && nw == 3 && !num(w[1], &a) && !num(w[2], &b)) {
        e->kind = TF_EV_RELEASE_FAILED;
        e->u.release_failed.release = a;
        e->u.release_failed.result = (int32_t)b;
    } else {
        return -1;
    }
    e->tid = t->tid;
    if (opens) {
        if (t->n == 64)
            return -1;
        t->st[t->n++] = (open_frame){0, e->parent, e->kind};
    }
    return 1;
}

int evtext_parse(const char *text, evtext *out, char *err, size_t errlen)
{
    tstate ts[16];
    int nts = 0, lineno = 0;
    size_t cap = 0;
    uint64_t stack[16];
    uint32_t nstack = 0;
    memset(out, 0, sizeof *out);
    char *copy = strdup(text), *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *w[12], *ws = NULL;
        int nw = 0;
        for (char *tok = strtok_r(line, " \t", &ws); tok && nw < 12; tok = strtok_r(NULL, " \t", &ws))
            w[nw++] = tok;
        uint32_t tid = 1;
        if (nw && w[0][0] == 't' && w[0][1] >= '0' && w[0][1] <= '9') {
            tid = (uint32_t)strtoul(w[0] + 1, NULL, 10);
            memmove(w, w + 1, --nw * sizeof *w);
        }
        if (!nw)
            continue;
        tstate *t = thread(ts, &nts, tid);
        if (out->n == cap) {
            cap = cap ? cap * 2 : 64;
            out->ev = realloc(out->ev, cap * sizeof *out->ev);
            out->stacks = realloc(out->stacks, cap * sizeof *out->stacks);
        }
        tf_event *e = &out->ev[out->n];
        memset(e, 0, sizeof *e);
        e->seq = out->n + 1;
        int rc = t ? parse_line(w, nw, e, t, out, stack, &nstack) : -1;
        if (rc < 0) {
            snprintf(err, errlen, "line %d: cannot parse '%s'", lineno, w[0]);
            free(copy);
            evtext_free(out);
            return -1;
        }
        if (rc == 0)
            continue;
        if (t->n && t->st[t->n - 1].seq == 0)
            t->st[t->n - 1].seq = e->seq;
        e->t_ns = e->seq * 1000;
        memcpy(out->stacks[out->n].ips, stack, sizeof stack);
        out->stacks[out->n].n = nstack;
        if (nstack)
            e->native_stack = (uint32_t)out->n + 1;  /* in memory: 1 + event index */
        nstack = 0;
        out->n++;
    }
    free(copy);
    return 0;
}

int evtext_load(const char *path, evtext *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[n] = 0;
    int rc = evtext_parse(buf, out, err, errlen);
    free(buf);
    return rc;
}

void evtext_free(evtext *t)
{
    free(t->ev);
    free(t->stacks);
    memset(t, 0, sizeof *t);
}
