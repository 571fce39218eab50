// A cgo program that exercises what the Go runtime does with signals,
// threads and its own stacks, run bare and under the preload
// (go_runtime.sh): goroutines calling C (2 MiB blocks, recorded under
// TRACE_HOST_BUFFERS=1), C threads calling back into Go, locked threads
// that exit, os/signal, nil dereferences and faults turned into panics,
// and children that end every way a Go program ends.
package main

/*
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

static void *c_alloc(size_t n) { void *p = malloc(n); memset(p, 1, n); return p; }
static void c_free(void *p) { free(p); }
static int c_segv(void) { volatile int *p = (int *)0; return *p; }
extern void goCallback(int);
static void *c_thread(void *arg) {
    for (int i = 0; i < 100; i++) { void *p = malloc(64); free(p); p = malloc(2<<20); free(p); goCallback(i); }
    return NULL;
}
static int c_threads(int n) {
    pthread_t t[16];
    for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, c_thread, NULL);
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return n;
}
static int c_raise(int sig) { return raise(sig); }
static int c_kill_self(int sig) { return kill(getpid(), sig); }
static int c_blocked(int sig) {
    sigset_t s, old; sigemptyset(&s); sigaddset(&s, sig);
    pthread_sigmask(SIG_BLOCK, NULL, &old);
    return sigismember(&old, sig);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

var callbacks int64

//export goCallback
func goCallback(i C.int) { atomic.AddInt64(&callbacks, 1) }

type T struct{ x int }

func nilDeref(p *T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return fmt.Errorf("%d", p.x)
}

func divZero(a, b int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return fmt.Errorf("%d", a/b)
}

func faultAddr() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(false)
	p := (*int)(unsafe.Pointer(uintptr(0xdead0000)))
	return fmt.Errorf("%d", *p)
}

func work() {
	// goroutines allocating through C and Go
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				p := C.c_alloc(C.size_t(64 + i))
				C.c_free(p)
				if i%20 == 0 {
					p = C.c_alloc(C.size_t(1<<21 + i))
					C.c_free(p)
				}
				b := make([]byte, 1<<10)
				_ = b
				runtime.Gosched()
			}
		}(g)
	}
	wg.Wait()
	fmt.Println("goroutines done")
	fmt.Println("c threads:", C.c_threads(8), "callbacks:", atomic.LoadInt64(&callbacks))
	// LockOSThread goroutines that exit: their threads go away
	for i := 0; i < 4; i++ {
		done := make(chan bool)
		go func() {
			runtime.LockOSThread()
			p := C.c_alloc(4 << 20)
			C.c_free(p)
			done <- true
		}()
		<-done
	}
	fmt.Println("locked threads done")
}

func signals() {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, syscall.SIGUSR1, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR2)
	for _, s := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		syscall.Kill(os.Getpid(), s)
		select {
		case got := <-ch:
			fmt.Println("got", got)
		case <-time.After(5 * time.Second):
			fmt.Println("timeout waiting for", s)
		}
	}
	// from C: raise on this thread and kill
	C.c_raise(C.int(syscall.SIGUSR2))
	fmt.Println("got", <-ch)
	C.c_kill_self(C.int(syscall.SIGUSR1))
	fmt.Println("got", <-ch)
	signal.Stop(ch)
	signal.Ignore(syscall.SIGHUP)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	time.Sleep(10 * time.Millisecond)
	signal.Reset(syscall.SIGHUP)
	fmt.Println("ignored SIGHUP; SIGSEGV blocked in C:", C.c_blocked(C.int(syscall.SIGSEGV)), "SIGUSR1:", C.c_blocked(C.int(syscall.SIGUSR1)))
}

func faults() {
	C.c_free(C.c_alloc(3 << 20))
	fmt.Println("nil deref:", nilDeref(nil))
	fmt.Println("div zero:", divZero(1, 0))
	fmt.Println("fault addr:", faultAddr())
	// from many goroutines at once
	var wg sync.WaitGroup
	var n int64
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if nilDeref(nil) != nil {
					atomic.AddInt64(&n, 1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Println("recovered faults:", n)
}

func children() {
	out, err := exec.Command("/bin/echo", "child echo").Output()
	fmt.Printf("echo: %q %v\n", out, err)
	out, err = exec.Command(os.Args[0], "exit3").CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		fmt.Printf("exit3 child: code %d out %q\n", ee.ExitCode(), out)
	}
	for _, mode := range []string{"panic", "sigterm", "cseg", "goseg", "sigpipe", "exit0", "abort", "sigquit", "segvnotify", "growstack"} {
		cmd := exec.Command(os.Args[0], mode)
		out, err = cmd.CombinedOutput()
		st := cmd.ProcessState.Sys().(syscall.WaitStatus)
		first := string(out)
		if len(first) > 60 {
			first = first[:60]
		}
		fmt.Printf("%s child: exited=%v code=%d signaled=%v sig=%v out=%q\n", mode, st.Exited(), st.ExitStatus(), st.Signaled(), st.Signal(), first)
	}
}

func recurse(n int) int {
	var buf [1024]byte
	buf[n%1024] = byte(n)
	if n == 0 {
		return int(buf[0])
	}
	return recurse(n-1) + int(buf[n%1024])
}

func main() {
	if len(os.Args) > 1 {
		C.c_free(C.c_alloc(3 << 20))
		switch os.Args[1] {
		case "exit3":
			fmt.Println("exiting 3")
			os.Exit(3)
		case "exit0":
			fmt.Println("returning")
			return
		case "panic":
			panic("boom")
		case "sigterm":
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
			time.Sleep(5 * time.Second)
			fmt.Println("still alive")
			os.Exit(9)
		case "sigquit":
			syscall.Kill(os.Getpid(), syscall.SIGQUIT)
			time.Sleep(5 * time.Second)
			os.Exit(9)
		case "abort":
			C.abort()
		case "cseg":
			C.c_segv()
		case "goseg":
			var p *T
			fmt.Println(p.x)
		case "segvnotify":
			debug.SetTraceback("crash")
			var p *T
			fmt.Println(p.x)
		case "sigpipe":
			r, w, _ := os.Pipe()
			r.Close()
			os.Stdout = w
			fmt.Println("x")
			fmt.Fprintln(os.Stderr, "after write")
			os.Exit(7)
		case "growstack":
			fmt.Println(recurse(100000))
		case "work":
			work()
		case "signals":
			signals()
		case "faults":
			faults()
		case "children":
			children()
		}
		return
	}
	work()
	signals()
	faults()
	children()
	fmt.Println("all done")
}
