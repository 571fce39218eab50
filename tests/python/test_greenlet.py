"""greenlet under the preload: stack switches by copying the C stack.

Between greenlet's copy back of the target's C stack and its putting the
target's Python state into the thread state, tstate->cframe (3.11/3.12)
points at memory the copy rewrote, and greenlet frees the heap copy there:
with large host blocks recorded (TRACE_HOST_THRESHOLD under the copy's
size) the free's Python stack walk faulted (SIGSEGV where the bare run
exits 0).  Checked here: the workload's exit status, output and empty
stderr match the bare run's, the log is whole (its END, ending=exit), and
buffers allocated inside greenlets carry the greenlet's own Python frames
(function and line, innermost first), on every interpreter that has
greenlet (skipped, and said, where it has not: scripts/test installs it).

All of it twice: with greenlet as installed (PyPI's module, whose switch
mark the preload finds in its .symtab), and with a copy of its package
whose _greenlet module is stripped, first on PYTHONPATH, as distributions
ship it (Debian 12's python3-greenlet): no mark to find, so host block
events read the Python stack through checked copies (python_greenlet.h);
before that, 3.11 and 3.12 exited 139 there."""
import json
import os
import shutil
import subprocess
import tempfile

import pytrace as pt

args = pt.parse_args()
fails = pt.Failures()
script = pt.workload("greenlet_switches.py")
ENV = {"TRACE_HOST_BUFFERS": "1", "TRACE_HOST_THRESHOLD": "4096"}
tested = []


def has_greenlet(python):
    return subprocess.run([python, "-c", "import greenlet"], capture_output=True).returncode == 0


def stripped_copy(python, tmp):
    """A copy of python's greenlet package under tmp, its _greenlet module
    stripped of every symbol table but the dynamic one: the directory to put
    first on PYTHONPATH, or None (said) where it cannot be made."""
    where = subprocess.run([python, "-c", "import greenlet, os; print(os.path.dirname(greenlet.__file__))"],
                           capture_output=True, text=True).stdout.strip()
    tool = shutil.which("strip") or shutil.which("objcopy")
    if not where or not tool:
        print("skipped: no greenlet package directory or no strip/objcopy for", python)
        return None
    root = os.path.join(tmp, "stripped")
    shutil.copytree(where, os.path.join(root, "greenlet"))
    mods = [os.path.join(root, "greenlet", f) for f in os.listdir(os.path.join(root, "greenlet"))
            if f.startswith("_greenlet.") and f.endswith(".so")]
    for mod in mods:
        subprocess.run([tool, "--strip-all", mod], check=True)
        with open(mod, "rb") as f:
            if b".symtab\0" in f.read():
                print("skipped: %s kept its .symtab" % mod)
                return None
    found = subprocess.run([python, "-c", "import greenlet._greenlet as g; print(g.__file__)"],
                           capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=root)).stdout
    if not mods or not found.startswith(root):
        print("skipped: the stripped copy is not the greenlet imported:", found.strip())
        return None
    return root


def check(python, version):
    tag = "%s (%s)" % (version, python)
    if not has_greenlet(python):
        print("skipped: no greenlet for", tag)
        return
    tested.append(tag)
    frees = check_one(python, tag, {})
    with tempfile.TemporaryDirectory() as tmp:
        root = stripped_copy(python, tmp)
        if not root:
            return
        stripped_tag = tag + ", stripped greenlet"
        stripped_frees = check_one(python, stripped_tag, {"PYTHONPATH": root})
    # The releases' stacks, read through checked copies where the module is
    # stripped (3.11, 3.12), are those the fast walk reads.
    print("     releases compared:", len(frees or {}), "with a stack:", sum(1 for v in (frees or {}).values() if v))
    if frees and stripped_frees:
        differ = [(size, frees[size][:3], stripped_frees.get(size, [])[:3]) for size in frees
                  if stripped_frees.get(size) != frees[size]]
        fails.check(not differ, "%s: %d marked buffers released under other stacks than with greenlet's "
                    "symbols, e.g. %s" % (stripped_tag, len(differ), differ[:2]))


def check_one(python, tag, extra_env):
    print("  ", tag)
    with tempfile.TemporaryDirectory() as tmp:
        bare_expect = os.path.join(tmp, "bare.json")
        traced_expect = os.path.join(tmp, "traced.json")
        bare = pt.run_traced([python, script, bare_expect], args.preload, args.pylog, trace=False,
                             env=extra_env)
        run = pt.run_traced([python, script, traced_expect], args.preload, args.pylog,
                            env=dict(ENV, **extra_env))
        if not fails.check(bare.proc.returncode == 0, "%s: bare run failed: %s"
                           % (tag, bare.proc.stderr[-800:])):
            return
        fails.check(run.proc.returncode == 0, "%s: traced run exited %d (bare 0): %s"
                    % (tag, run.proc.returncode, run.proc.stderr[-800:]))
        fails.check(run.proc.stdout == bare.proc.stdout, "%s: output differs: %r, bare %r"
                    % (tag, run.proc.stdout[-300:], bare.proc.stdout[-300:]))
        fails.check(run.proc.stderr == "", "%s: stderr traced: %r" % (tag, run.proc.stderr[-300:]))
        if run.proc.returncode != 0:
            return None
        fails.check(len(run.of("end")) == 1 and run.info("ending") == ["exit"],
                    "%s: the log is not whole: %d END, ending %s" % (tag, len(run.of("end")), run.info("ending")))
        with open(traced_expect) as f:
            expect = {int(k): [tuple(x) for x in v] for k, v in json.load(f).items()}
    # bytearray(n) asks for n + 1 bytes.
    found, wrong = set(), []
    for e in run.of("host_alloc"):
        size = e["size"] - 1
        if size not in expect:
            continue
        found.add(size)
        # 3.11 and later name frames by their qualified name.
        got = [(fr[2].rsplit(".", 1)[-1], fr[1]) for fr in e["py"] if fr[0] == script]
        want = [w for w in expect[size] if w[0] != "<module>"]
        got = [g for g in got if g[0] != "<module>"]
        if got != want:
            wrong.append((size, want[:4], got[:4]))
    fails.check(len(found) == len(expect), "%s: %d of %d marked buffers recorded"
                % (tag, len(found), len(expect)))
    fails.check(not wrong, "%s: %d buffers with another stack than their greenlet's, e.g. %s"
                % (tag, len(wrong), wrong[:2]))
    frees, live = {}, {}
    for e in sorted(run.of("host_alloc") + run.of("host_free"), key=lambda e: e["seq"]):
        if e["kind"] == "host_alloc":
            live[e["ptr"]] = e["size"] - 1
        elif live.get(e["ptr"]) in expect:
            frees[live.pop(e["ptr"])] = e["py"]
    return frees


def finish_or_skip():
    if not tested:
        print("skipped: no interpreter has greenlet (pip install greenlet)")
        raise SystemExit(pt.SKIP)


interpreters = pt.find_interpreters(args.python)
if not interpreters:
    raise SystemExit(pt.SKIP)
for python, version in interpreters:
    print("==", version, python)
    check(python, version)
finish_or_skip()
fails.finish()
