/*
 * foreign_unwind.c - a stand-in for a foreign libunwind.so.8 (LLVM's, as
 * toolchains and conda environments ship it): the soname of libunwind 1.x,
 * none of its _UL* functions or unw_backtrace.  preload.foreign_libs puts
 * it first on LD_LIBRARY_PATH and has the program load it.
 */
int unw_getcontext(void *context);
int unw_init_local(void *cursor, void *context);
int unw_step(void *cursor);
int _Unwind_Backtrace(void *fn, void *arg);
int foreign_unwind_marker(void);

int unw_getcontext(void *context)
{
    (void)context;
    return -1;
}

int unw_init_local(void *cursor, void *context)
{
    (void)cursor;
    (void)context;
    return -1;
}

int unw_step(void *cursor)
{
    (void)cursor;
    return 0;
}

int _Unwind_Backtrace(void *fn, void *arg)
{
    (void)fn;
    (void)arg;
    return 5;   /* _URC_END_OF_STACK */
}

int foreign_unwind_marker(void)
{
    return 8;
}
