/*
 * test_symbolize.c - the symboliser on this very program: found by its
 * recorded path, by build-id and by basename in a debug directory; never
 * through a file whose build-id differs; unharmed by odd files; C++ names
 * demangled.
 */
#include <dlfcn.h>
#include <sys/stat.h>

#include "self_module.h"
#include "symbolize.h"
#include "tf_test.h"

/* The functions whose names and lines are looked up keep them: not inlined,
 * and not cloned by link-time optimisation (a constprop clone's symbol is
 * "called(int) [clone .constprop.0]"). */
#if defined(__clang__)
#define KEEP_AS_WRITTEN __attribute__((noinline))
#else
#define KEEP_AS_WRITTEN __attribute__((noinline, noclone))
#endif

static self_module me;
static KEEP_AS_WRITTEN uint64_t return_address(void)
{
    return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static uint64_t call_ip;
static int call_line;

static KEEP_AS_WRITTEN void a_known_caller(void)
{
    call_ip = return_address() - 1; call_line = __LINE__;
}

/* A function whose symbol is a C++ one (trace::demo::called(int)): the
 * symboliser gives it back demangled. */
static uint64_t cxx_ip;
KEEP_AS_WRITTEN void cxx_named(int x) __asm__("_ZN5trace4demo6calledEi");
KEEP_AS_WRITTEN void cxx_named(int x)
{
    cxx_ip = return_address() - 1 + (uint64_t)(x & 0);
}

static void check_found(sym_ctx *s, const tf_module *m, const char *how)
{
    sym_info si;
    int ok = sym_lookup(s, m, call_ip, &si);
    CHECK(ok == 1);
    CHECK(si.function && strcmp(si.function, "a_known_caller") == 0);
    CHECK(si.file && strstr(si.file, "test_symbolize.c") != NULL);
    CHECK(si.line == call_line);
    if (!ok || !si.function || si.line != call_line)
        fprintf(stderr, "  (%s: function %s file %s line %d binary %s)\n", how,
                si.function ? si.function : "-", si.file ? si.file : "-", si.line,
                si.binary ? si.binary : "-");
}

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[65536];
    size_t n;
    CHECK(in && out);
    while (in && out && (n = fread(buf, 1, sizeof buf, in)) > 0)
        CHECK(fwrite(buf, 1, n, out) == n);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(void)
{
    self_module_get(&me);
    CHECK(me.path[0] == '/' && me.m.build_id_len >= 8);
    a_known_caller();

    /* 1. the recorded path */
    sym_ctx *s = sym_new(NULL, 0);
    check_found(s, &me.m, "recorded path");
    sym_free(s);

    /* 2. a different build-id: the recorded file must not be used */
    tf_module other = me.m;
    uint8_t wrong[64];
    memcpy(wrong, me.build_id, sizeof wrong);
    wrong[0] ^= 0xff;
    other.build_id = wrong;
    s = sym_new(NULL, 0);
    sym_info si;
    CHECK(sym_lookup(s, &other, call_ip, &si) == 0 && si.function == NULL && si.binary == NULL);
    sym_free(s);

    /* 3. a debug directory: odd files first, then the binary by basename */
    char dir[] = "/tmp/tf_sym_XXXXXX", path[4500];
    CHECK(mkdtemp(dir) != NULL);
    tf_module moved = me.m;
    moved.path = "/nonexistent/place/test_symbolize_moved";
    snprintf(path, sizeof path, "%s/test_symbolize_moved", dir);
    write_file(path, "not an ELF file\n");
    const char *dirs[] = { "/nonexistent/debug", dir };
    s = sym_new(dirs, 2);
    CHECK(sym_lookup(s, &moved, call_ip, &si) == 0);  /* garbage is skipped */
    sym_free(s);
    unlink(path);
    CHECK(mkdir(path, 0700) == 0);                      /* so is a directory */
    s = sym_new(dirs, 2);
    CHECK(sym_lookup(s, &moved, call_ip, &si) == 0);
    sym_free(s);
    rmdir(path);
    copy_file(me.path, path);
    s = sym_new(dirs, 2);
    check_found(s, &moved, "basename in a debug dir");
    CHECK(sym_lookup(s, &moved, call_ip, &si) == 1 && strcmp(si.binary, path) == 0);
    sym_free(s);
    unlink(path);

    /* 3b. a binary without .debug_aranges (clang's default): lines still found */
    char cmd[9100];
    snprintf(cmd, sizeof cmd, "objcopy --remove-section=.debug_aranges '%s' '%s' 2>/dev/null",
             me.path, path);
    if (system(cmd) == 0) {
        s = sym_new(dirs, 2);
        check_found(s, &moved, "no .debug_aranges");
        sym_free(s);
        unlink(path);
    } else {
        printf("objcopy unavailable: the no-aranges case is not checked\n");
    }

    /* 4. .build-id/xx/rest.debug in a debug directory */
    char id[130], sub[256];
    for (uint32_t i = 0; i < me.m.build_id_len; i++)
        sprintf(id + 2 * i, "%02x", me.build_id[i]);
    snprintf(sub, sizeof sub, "%s/.build-id", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/.build-id/%.2s", dir, id);
    mkdir(sub, 0700);
    snprintf(path, sizeof path, "%s/%s.debug", sub, id + 2);
    copy_file(me.path, path);
    moved.path = "/nonexistent/another_name";
    s = sym_new(dirs, 2);
    check_found(s, &moved, "build-id in a debug dir");
    sym_free(s);
    unlink(path);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/.build-id", dir);
    rmdir(sub);
    rmdir(dir);

    /* 4b. a C++ symbol, demangled (as it is where libstdc++ is absent) */
    cxx_named(1);
    s = sym_new(NULL, 0);
    const char *want = dlopen("libstdc++.so.6", RTLD_LAZY) ? "trace::demo::called(int)"
                                                           : "_ZN5trace4demo6calledEi";
    CHECK(sym_lookup(s, &me.m, cxx_ip, &si) == 1 && si.function && strcmp(si.function, want) == 0);
    CHECK(sym_function(s, &me.m, cxx_ip) == si.function);   /* one string per symbol */
    if (!si.function || strcmp(si.function, want) != 0)
        fprintf(stderr, "  (C++ symbol: %s, want %s)\n", si.function ? si.function : "-", want);
    sym_free(s);

    /* 5. no module, and an address outside every symbol */
    s = sym_new(NULL, 0);
    CHECK(sym_lookup(s, NULL, call_ip, &si) == 0);
    CHECK(sym_lookup(s, &me.m, me.m.base + 0x7fffffff0000ull, &si) == 0);
    sym_free(s);
    return tf_test_done("symbolize");
}
