#!/bin/sh
# preload.dlopen_dladdr: the calls to dladdr (a symbol search, some 58,000
# instructions each) that a Python process under the preload makes do not
# grow with its dlopens.  Our dlopen hook asked for the object of
# PySys_AddAuditHook after each one: pyenv's `python3.11 -c pass` made 14
# calls, 17 when it also imported three extension modules.
#   dlopen_dladdr.sh PYTHON COUNTER LIBTRACE
set -eu
py=$("$1" -c 'import sys; print(sys.executable)')   # past a pyenv shim
count() {
    LD_PRELOAD="$2:$3" TRACE_OUTPUT=/dev/null/x TRACE_QUIET=1 "$py" -c "$1" 2>&1 |
        sed -n 's/^dladdr calls: //p'
}
none=$(count pass "$2" "$3")
some=$(count 'import math, array, _json, _bisect, _random, _struct, _heapq, _csv, _contextvars' "$2" "$3")
echo "dladdr calls: $none without imports, $some with nine extension modules"
[ -n "$none" ] && [ "$none" = "$some" ]
