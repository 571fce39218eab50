// A cgo program that records four large blocks (TRACE_HOST_BUFFERS=1)
// and ends through C's exit(0) (go_exit_signal.sh).
package main

/*
#include <stdlib.h>
static void work_then_exit(void) {
    for (int i = 0; i < 4; i++) { void *p = malloc(2 << 20); free(p); }
    exit(0);
}
*/
import "C"

func main() { C.work_then_exit() }
