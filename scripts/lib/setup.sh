# scripts/lib/setup.sh - shared by scripts/test and scripts/quickstart.
#
# Installs what a fresh Debian 12 machine lacks (only what is missing, so a
# second run costs a few dpkg queries) and configures and builds the project.

# Debian packages the build and the tests need.
TRACE_PACKAGES="build-essential cmake pkg-config libunwind-dev libzstd-dev libdw-dev patchelf \
libelf-dev zstd clang libclang-rt-14-dev heaptrack python3 python3.11-dev chromium \
libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 python3-numpy python3.11-dbg"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing_packages() {
    for p in $TRACE_PACKAGES ${TRACE_EXTRA_PACKAGES:-}; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' \
            || printf '%s ' "$p"
    done
}

ensure_packages() {
    missing=$(missing_packages)
    [ -z "$missing" ] && return 0
    echo "setup: installing $missing"
    as_root apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends $missing \
        >/dev/null
}

# Python packages some tests use, installed into the interpreters they run
# (numpy: ordinary C-extension code that must give no double-init report, and
# the seed-002 story with arrays, on every version from 3.8 to 3.13; pip picks
# the newest numpy each version supports; greenlet: python_greenlet, stack
# switches by copying the C stack, a wheel of under 1 MB).  3.12 and 3.13
# also get pytest and hypothesis: torture.suites runs numpy.lib's tests with
# them, bare and traced (without them that part is skipped).
ensure_python_packages() {
    for python in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3.[0-9] \
                  "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3.[0-9][0-9]; do
        [ -x "$python" ] || continue
        "$python" -c 'import sys; sys.exit(not (3, 8) <= sys.version_info[:2] <= (3, 13))' \
            2>/dev/null || continue
        packages="numpy greenlet"
        if "$python" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 12))' 2>/dev/null; then
            packages="numpy greenlet pytest hypothesis"
        fi
        "$python" -c "import $(echo "$packages" | tr ' ' ',')" 2>/dev/null && continue
        echo "setup: pip install $packages for $python"
        # shellcheck disable=SC2086
        "$python" -m pip install -q --disable-pip-version-check --root-user-action=ignore $packages \
            >/dev/null
    done
}

# Wheels the install tests put into fresh venvs without a network
# (pip install --no-index --find-links): pip install .'s build backend, and
# pytest with pytest-xdist for the pytest plugin.  Fetched once, for the
# python3 the tests run; pure-Python wheels.  tests/install reads the same
# default place (or TRACE_WHEELHOUSE).
TRACE_WHEELHOUSE=${TRACE_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/gputrace/wheels}
TRACE_WHEELS="scikit-build-core pytest pytest-xdist"
ensure_wheelhouse() {
    have=1
    for w in scikit_build_core pytest pytest_xdist; do
        ls "$TRACE_WHEELHOUSE/$w"-*.whl >/dev/null 2>&1 || have=0
    done
    [ "$have" -eq 1 ] && return 0
    echo "setup: pip download $TRACE_WHEELS into $TRACE_WHEELHOUSE"
    mkdir -p "$TRACE_WHEELHOUSE"
    # shellcheck disable=SC2086
    python3 -m pip download -q --disable-pip-version-check --only-binary=:all: \
        --dest "$TRACE_WHEELHOUSE" $TRACE_WHEELS >/dev/null
}

# Real CuPy for python_real_cupy (CuPy's own pool code traced on the CUDA
# doubles, no GPU): cupy-cuda13x in a venv of its own, made from pyenv's 3.11
# (its numpy comes along; the interpreters the other tests run stay as they
# are).  tests/python/test_real_cupy.py finds it at the same default place
# (or TRACE_CUPY_PYTHON).  Best effort: without PyPI the test skips and says
# so.
TRACE_CUPY_VENV=${TRACE_CUPY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/gputrace/cupy-venv}
ensure_cupy() {
    "$TRACE_CUPY_VENV/bin/python" -c 'import cupy' 2>/dev/null && return 0
    python=
    for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.11*/bin/python3.11; do
        [ -x "$p" ] && python=$p
    done
    if [ -z "$python" ]; then
        echo "setup: no pyenv python3.11 for CuPy: python_real_cupy will skip"
        return 0
    fi
    echo "setup: pip install cupy-cuda13x into $TRACE_CUPY_VENV"
    rm -rf "$TRACE_CUPY_VENV"
    if ! { "$python" -m venv "$TRACE_CUPY_VENV" &&
           "$TRACE_CUPY_VENV/bin/python" -m pip install -q --disable-pip-version-check \
               cupy-cuda13x >/dev/null; }; then
        echo "setup: CuPy could not be installed: python_real_cupy will skip"
        rm -rf "$TRACE_CUPY_VENV"
    fi
    return 0
}

# The configuration CI tests: quickstart builds the same, so neither
# rebuilds what the other built.
TRACE_CMAKE_OPTIONS="-DTRACE_WERROR=ON -DTRACE_FUZZ=ON"

# build DIR [cmake options...]: configure (a no-op when nothing changed), then
# build incrementally.
build() {
    dir=$1; shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    cmake --build "$dir" -j"$(nproc)" >"$dir/build.log" 2>&1 || { cat "$dir/build.log"; return 1; }
}
