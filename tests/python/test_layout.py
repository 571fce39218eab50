"""The structure offsets the recorder reads (preload/python_layout_tables.h,
and the 3.13 frame walk's constants) against each interpreter's own headers:
layout_check.c compiled with that interpreter's include directory and
Py_BUILD_CORE, then run.  An interpreter without its headers (Debian's
python3.11 without python3.11-dev) is skipped with a message; none at all
with headers is a skip of the whole test."""
import os
import subprocess
import sys
import tempfile

import pytrace as pt

args = pt.parse_args(lambda p: p.add_argument("--preload-src", required=True))
fails = pt.Failures()
SOURCE = os.path.join(pt.HERE, "layout_check.c")
checked = []


def check(python, version):
    include = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    if not os.path.exists(os.path.join(include, "internal", "pycore_interp.h" if version != "3.8"
                                       else "pycore_pystate.h")):
        print("skipped: no internal headers in %s" % include)
        return
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "layout_check")
        cc = subprocess.run([os.environ.get("CC", "cc"), "-std=gnu11", "-w", "-I" + include,
                             "-I" + args.preload_src, SOURCE, "-o", exe],
                            capture_output=True, text=True)
        if not fails.check(cc.returncode == 0, "%s: layout_check.c does not compile against %s:\n%s"
                           % (version, include, cc.stderr[-3000:])):
            return
        run = subprocess.run([exe], capture_output=True, text=True)
        print(run.stdout, end="")
        fails.check(run.returncode == 0, "%s: offsets differ from the headers" % version)
        checked.append(version)


interpreters = pt.find_interpreters(args.python)
for python, version in interpreters:
    print("==", version, python)
    check(python, version)
if not checked and not fails.messages:
    print("skipped: no interpreter with its internal headers")
    sys.exit(pt.SKIP)
fails.finish()
