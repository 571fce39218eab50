/*
 * foreign_plugin.c - a plugin linked against the stand-in libunwind.so.8
 * (foreign_unwind.c), which the program opens after the tracer started:
 * its DT_NEEDED must find the one its environment names, not the
 * tracer's (preload.foreign_libs).
 */
int foreign_unwind_marker(void);
int foreign_plugin_marker(void);

int foreign_plugin_marker(void)
{
    return 100 + foreign_unwind_marker();
}
