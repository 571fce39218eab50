/*
 * embed_rounds - a program that embeds CPython and runs it three times
 * (Py_Initialize ... Py_FinalizeEx, again and again), as plugin hosts and
 * test harnesses do.  Each round keeps a 3 MiB bytearray in a cycle until
 * gc.collect() frees it.  Built by test_interpreters.py against each
 * interpreter's headers and shared libpython.
 */
#include <Python.h>

#include "embed_round.h"

int main(void)
{
    for (int round = 0; round < 3; round++) {
        Py_Initialize();
        if (PyRun_SimpleString(round_code) != 0)
            return 1;
        if (Py_FinalizeEx() != 0)
            return 2;
    }
    return 0;
}
