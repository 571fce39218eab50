/*
 * own_stack.c - a stack of our own, and the few instructions that switch to
 * it (see own_stack.h).
 */
#include "own_stack.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define STACK_SIZE (256u * 1024)

static char *stack_lo;     /* lowest usable byte, above the guard page */
static size_t stack_size;

/* trace_run_on_stack: the frame pointer keeps the old stack pointer; the
 * CFI lets debuggers unwind from our stack to the app's. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl trace_run_on_stack\n"
        ".hidden trace_run_on_stack\n"
        ".type trace_run_on_stack,@function\n"
        "trace_run_on_stack:\n"
        "    .cfi_startproc\n"
        "    pushq %rbp\n"
        "    .cfi_def_cfa_offset 16\n"
        "    .cfi_offset %rbp, -16\n"
        "    movq %rsp, %rbp\n"
        "    .cfi_def_cfa_register %rbp\n"
        "    movq %rdx, %rsp\n"
        "    movq %rdi, %rax\n"
        "    movq %rsi, %rdi\n"
        "    callq *%rax\n"
        "    movq %rbp, %rsp\n"
        "    popq %rbp\n"
        "    .cfi_def_cfa %rsp, 8\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size trace_run_on_stack, .-trace_run_on_stack\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl trace_run_on_stack\n"
        ".hidden trace_run_on_stack\n"
        ".type trace_run_on_stack,%function\n"
        "trace_run_on_stack:\n"
        "    .cfi_startproc\n"
        "    stp x29, x30, [sp, #-16]!\n"
        "    .cfi_def_cfa_offset 16\n"
        "    .cfi_offset x29, -16\n"
        "    .cfi_offset x30, -8\n"
        "    mov x29, sp\n"
        "    .cfi_def_cfa_register x29\n"
        "    mov sp, x2\n"
        "    mov x16, x0\n"
        "    mov x0, x1\n"
        "    blr x16\n"
        "    mov sp, x29\n"
        "    ldp x29, x30, [sp], #16\n"
        "    .cfi_def_cfa sp, 0\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size trace_run_on_stack, .-trace_run_on_stack\n");
#else
#error "own_stack.c needs a few lines of assembly for this architecture"
#endif

void own_stack_init(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, STACK_SIZE + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return;
    mprotect(p, page, PROT_NONE);   /* an overflow faults instead of writing below */
    stack_lo = p + page;
    stack_size = STACK_SIZE;
}

void own_stack_run(void (*fn)(void *), void *arg)
{
    if (!stack_lo) {
        fn(arg);
        return;
    }
    uintptr_t top = ((uintptr_t)stack_lo + stack_size) & ~(uintptr_t)15;
    trace_run_on_stack(fn, arg, (void *)top);
}
