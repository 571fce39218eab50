/*
 * test_hook_stack.c - the recorder's stacks aside (preload/hook_stack.c):
 * work that cannot run on the calling thread's stack runs on one of ours,
 * and a thread that finds all eight taken still runs, even while their
 * holders wait for it.
 *
 * The holders here wait for a flag only the ninth thread sets, as threads
 * holding a stack of ours wait for the GIL a ninth holds when the work
 * runs Python code: a ninth that waited for a slot would never come back
 * (alarm).  The thread's own stack is stubbed as having no room, so every
 * call goes aside.
 */
#include "hook_stack.h"
#include "thread_stack.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* thread_stack.c's part, stubbed: no stack of any thread has room. */
__thread uintptr_t thread_stack_lo __attribute__((tls_model("initial-exec")));
__thread uintptr_t thread_stack_hi __attribute__((tls_model("initial-exec")));
int thread_stack_reach_slow(uintptr_t here, uintptr_t want)
{
    (void)here;
    (void)want;
    return 0;
}

#define HOLDERS 12     /* more than the eight mapped at start */

static int failures;
static _Atomic int inside, released, ran_aside;
static _Atomic int released_by;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
            failures++;                                          \
        }                                                        \
    } while (0)

/* Where the work runs: not on the calling thread's stack, and deep enough
 * to use some of what it was given. */
static void note_aside(void)
{
    volatile char use[16 * 1024];
    memset((char *)use, 1, sizeof use);
    if (hook_stack_aside > 0)
        atomic_fetch_add(&ran_aside, 1);
}

static void hold(void *arg)
{
    (void)arg;
    note_aside();
    atomic_fetch_add(&inside, 1);
    while (!atomic_load(&released))
        usleep(100);
}

static void release(void *arg)
{
    note_aside();
    atomic_store(&released_by, (int)(intptr_t)arg);
    atomic_store(&released, 1);
}

static void *holder(void *arg)
{
    (void)arg;
    hook_stack_run(hold, NULL);
    return NULL;
}

static void *releaser(void *arg)
{
    hook_stack_run(release, arg);
    return NULL;
}

int main(void)
{
    alarm(20);       /* a ninth that waits for a slot hangs: SIGALRM fails the test */
    hook_stack_init();

    /* One call alone: aside, and back. */
    hook_stack_run(release, (void *)(intptr_t)1);
    CHECK(atomic_load(&released_by) == 1, "a lone call did not run");
    CHECK(atomic_load(&ran_aside) == 1, "a lone call ran on the caller's stack");
    atomic_store(&released, 0);
    atomic_store(&ran_aside, 0);

    /* Twelve holders: eight on the stacks mapped at start, four on stacks
     * mapped for them; then one more releases them all. */
    pthread_t t[HOLDERS], r;
    for (int i = 0; i < HOLDERS; i++)
        pthread_create(&t[i], NULL, holder, NULL);
    while (atomic_load(&inside) < HOLDERS)
        usleep(100);
    pthread_create(&r, NULL, releaser, (void *)(intptr_t)2);
    pthread_join(r, NULL);
    for (int i = 0; i < HOLDERS; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&released_by) == 2, "the thread after the holders did not run");
    CHECK(atomic_load(&ran_aside) == HOLDERS + 1, "%d of %d calls ran aside",
          atomic_load(&ran_aside), HOLDERS + 1);

    /* The stacks come back: the eight are free again, and the mapped ones
     * are gone (a second round works the same). */
    atomic_store(&released, 0);
    atomic_store(&inside, 0);
    atomic_store(&ran_aside, 0);
    for (int i = 0; i < HOLDERS; i++)
        pthread_create(&t[i], NULL, holder, NULL);
    while (atomic_load(&inside) < HOLDERS)
        usleep(100);
    pthread_create(&r, NULL, releaser, (void *)(intptr_t)3);
    pthread_join(r, NULL);
    for (int i = 0; i < HOLDERS; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&released_by) == 3, "the second round's releaser did not run");
    CHECK(atomic_load(&ran_aside) == HOLDERS + 1, "second round: %d of %d calls ran aside",
          atomic_load(&ran_aside), HOLDERS + 1);

    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("hook stacks: 13 threads at once, eight slots: all ran aside\n");
    return 0;
}
