/*
 * test_proc_stat.c - fields of /proc/PID/stat lines (preload/proc_stat.h),
 * command names with spaces and parentheses included.
 */
#include "proc_stat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void expect(const char *line, int field, const char *want)
{
    const char *got = proc_stat_field(line, field);
    int same = want ? got && strncmp(got, want, strlen(want)) == 0 &&
                          (got[strlen(want)] == ' ' || got[strlen(want)] == '\0' || got[strlen(want)] == '\n')
                    : got == NULL;
    if (!same) {
        failures++;
        fprintf(stderr, "FAIL: field %d of %s: %s, expected %s\n", field, line, got ? got : "(none)",
                want ? want : "(none)");
    }
}

int main(void)
{
    /* Fields 3 (state), 7 (tty_nr) and 20 (num_threads). */
    const char *plain = "4242 (python3) S 1 4242 4242 34816 4242 4194560 1 2 3 4 5 6 7 8 20 0 3 0 99";
    expect(plain, 3, "S");
    expect(plain, 7, "34816");
    expect(plain, 20, "3");
    const char *odd = "7 (a) b (c) d) Z 1 7 7 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 2 0 99\n";
    expect(odd, 3, "Z");
    expect(odd, 7, "0");
    expect(odd, 20, "2");
    expect("1 (x) R", 3, "R");
    expect("1 (x) R", 4, NULL);
    expect("1 (x)", 3, NULL);
    expect("garbage", 3, NULL);
    expect("", 3, NULL);
    /* This process's own line: its state is R and it has one thread. */
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (f && fgets(buf, sizeof buf, f)) {
        expect(buf, 3, "R");
        expect(buf, 20, "1");
    }
    if (f)
        fclose(f);
    if (failures)
        return 1;
    printf("proc_stat: fields found after the last ')'\n");
    return 0;
}
