// A cgo program that records four large blocks (TRACE_HOST_BUFFERS=1)
// and ends through C's exit(0), or _exit(0) when asked (go_exit_signal.sh).
package main

/*
#include <stdlib.h>
#include <unistd.h>
static void work_then_exit(int underscore) {
    for (int i = 0; i < 4; i++) { void *p = malloc(2 << 20); free(p); }
    if (underscore)
        _exit(0);
    exit(0);
}
*/
import "C"

import "os"

func main() {
	underscore := 0
	if len(os.Args) > 1 && os.Args[1] == "_exit" {
		underscore = 1
	}
	C.work_then_exit(C.int(underscore))
}
