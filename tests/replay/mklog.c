/* mklog.c - write a scenario (evtext) as a real log, with the format's
 * writer: tests then run trace-replay and trace-dump on it.
 *
 *     mklog SCENARIO.txt OUT.log
 *
 * Native stacks given with "stack" lines are attached to the next event, and
 * one fake module ("/opt/fake/libpool.so" at 0x400000) holds them, so
 * reports show module+offset.  --reload-at N: before event N (from 0) that
 * module is unloaded and "/opt/fake/libpool_v2.so", another build, loaded
 * at its addresses (a library closed and another opened in its place). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evtext.h"

int main(int argc, char **argv)
{
    /* --frame-each: a frame for each event, and on stdout where each frame
     * starts (a test cuts frames out). */
    int each = argc == 4 && !strcmp(argv[3], "--frame-each");
    long reload_at = argc == 5 && !strcmp(argv[3], "--reload-at") ? strtol(argv[4], NULL, 10) : -1;
    if (argc != 3 && !each && reload_at < 0) {
        fprintf(stderr, "usage: mklog SCENARIO.txt OUT.log [--frame-each | --reload-at N]\n");
        return 2;
    }
    evtext t;
    char err[256];
    if (evtext_load(argv[1], &t, err, sizeof err) < 0) {
        fprintf(stderr, "mklog: %s\n", err);
        return 2;
    }
    tf_header h = {.version_major = TF_VERSION_MAJOR, .version_minor = TF_VERSION_MINOR, .pid = 4242, .ppid = 1,
                   .hostname = "testhost", .cmdline = "python app.py", .exe = "/usr/bin/python3",
                   .tracer_version = "test", .settings = "", .python_version = "3.11.0"};
    tf_writer *w = tf_writer_new(&h);
    tf_segment seg = {0, 0x100000, 5};
    uint32_t pool_module =
        tf_write_module_load(w, "/opt/fake/libpool.so", 0x400000, (const uint8_t *)"\x12\x34\x56\x78", 4, &seg, 1);
    for (int i = 0; i < t.npools; i++)
        tf_write_pool(w, t.pools[i].id, t.pools[i].name);
    tf_write_thread_names(w, 1, "python3", "MainThread");
    uint32_t file = tf_write_string(w, "app.py", 6), fn = tf_write_string(w, "step", 4);
    uint32_t code = tf_write_py_code(w, file, fn, 10);
    tf_chunk c = {0};
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = fd < 0 ? -1 : 0;
    for (size_t i = 0; i < t.n; i++) {
        if (each && i && rc == 0) {
            tf_writer_seal(w, &c);
            printf("%lld\n", (long long)lseek(fd, 0, SEEK_CUR));
            rc = tf_chunk_write(fd, &c, NULL, 3);
        }
        if ((long)i == reload_at) {
            tf_write_module_unload(w, pool_module);
            tf_writer_forget_native_stacks(w);   /* as the recorder does */
            tf_write_module_load(w, "/opt/fake/libpool_v2.so", 0x400000, (const uint8_t *)"\x9a\xbc\xde\xf0", 4,
                                 &seg, 1);
        }
        tf_event e = t.ev[i];
        if (t.stacks[i].n) {
            e.native_stack = tf_write_native_stack(w, t.stacks[i].ips, t.stacks[i].n);
            tf_py_frame f = {code, (uint32_t)(10 + i)};
            e.py_stack = tf_write_py_stack(w, &f, 1);
        }
        tf_write_event(w, &e);
    }
    if (t.has_end) {
        tf_event end = {.kind = TF_EV_END, .seq = t.n + 1, .tid = 1, .t_ns = (t.n + 1) * 1000};
        tf_write_event(w, &end);
    }
    tf_writer_seal(w, &c);
    if (each && rc == 0)
        printf("%lld\n", (long long)lseek(fd, 0, SEEK_CUR));
    if (rc == 0)
        rc = tf_chunk_write(fd, &c, NULL, 3);
    if (fd >= 0)
        close(fd);
    tf_writer_free(w);
    tf_chunk_free(&c);
    evtext_free(&t);
    if (rc) {
        fprintf(stderr, "mklog: cannot write %s\n", argv[2]);
        return 2;
    }
    return 0;
}
