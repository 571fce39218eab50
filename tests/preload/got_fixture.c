/*
 * got_fixture.c - a library that calls got_target_fn, which the test
 * program defines and exports (so the program's wins the lookup, as a static
 * interpreter's PyObject_Init does).  Built several ways (CMakeLists.txt):
 * calls through the PLT, or through GLOB_DAT slots in RELRO (-fno-plt,
 * -z now); with OWN it also defines got_target_fn itself.
 */
int got_target_fn(int x);

#ifdef OWN
int got_target_fn(int x)
{
    return x + 1000;
}
#endif

int got_call(int x)
{
    return got_target_fn(x);
}
