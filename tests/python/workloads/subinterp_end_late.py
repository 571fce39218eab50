# A subinterpreter ended 150 ms after it last ran Python code, from the main
# thread and from a thread of its own.  On 3.8 the tracer's audit hook (the
# runtime's, so called in subinterpreters too) looked up the thread's name
# at "cpython.PyInterpreterState_Clear", which Py_EndInterpreter raises once
# the interpreter's modules are gone: PyImport_GetModule aborted the program
# ("PyImport_GetModuleDict: no module dictionary!") when that was the
# thread's first look in 100 ms.  Exit 77: no subinterpreter module.
import sys
import threading

try:
    import _xxsubinterpreters as interpreters
except ImportError:
    try:
        import _interpreters as interpreters
    except ImportError:
        sys.exit(77)


def run_and_end():
    iid = interpreters.create()
    run = interpreters.run_string if hasattr(interpreters, "run_string") else interpreters.exec
    run(iid, "import time\ntime.sleep(0.15)\n")
    interpreters.destroy(iid)


run_and_end()
t = threading.Thread(target=run_and_end)
t.start()
t.join()
print("ok")
