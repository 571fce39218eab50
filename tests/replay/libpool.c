/*
 * libpool.c - the module mklog's logs name ("/opt/fake/libpool.so", build-id
 * 12345678), found through --debug-dir: a collection's stack that starts in
 * append_to_free_list says it ran inside CuPy's free-list bookkeeping, as
 * the symbols of a real pool would (the replay places nested collections by
 * their stacks, never on a guess).
 */
__attribute__((noinline, used)) void append_to_free_list(void) { __asm__ volatile(""); }
__attribute__((noinline, used)) void pool_free(void) { __asm__ volatile(""); }
