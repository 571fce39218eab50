#!/usr/bin/env python3
"""The pools' allocator settings as the traced process saw them: a program
that sets PYTORCH_ALLOC_CONF and TF_FORCE_GPU_ALLOW_GROWTH with os.environ
after it started (as training scripts do before importing torch), with
PYTORCH_CUDA_ALLOC_CONF given from the start, then allocates through the
CUDA runtime double: the log holds all three as INFO env:NAME, and a
variable that was never set is not there.

    test_alloc_env.py --preload LIB --dump TRACE_DUMP --doubles DIR
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

PROGRAM = r'''
import ctypes, os, sys
os.environ["PYTORCH_ALLOC_CONF"] = "expandable_segments:True,max_split_size_mb:64"
os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] = "true"
cudart = ctypes.CDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
p = ctypes.c_void_p()
assert cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4096)) == 0
os.environ["PYTORCH_ALLOC_CONF"] = "changed after the allocator started"
assert cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4096)) == 0
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preload", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--doubles", required=True)
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.doubles, "libcudart.so.13")):
        print("SKIP: no CUDA runtime double")
        return 77
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "env.tlog")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TRACE_", "PYTORCH_", "TF_", "XLA_", "CUPY_"))}
        env.update({"LD_PRELOAD": args.preload, "TRACE_OUTPUT": log, "LD_LIBRARY_PATH": args.doubles,
                    "PYTORCH_CUDA_ALLOC_CONF": "garbage_collection_threshold:0.7"})
        p = subprocess.run([sys.executable, "-c", PROGRAM, args.doubles], env=env, capture_output=True, text=True)
        if p.returncode:
            print("FAIL: program: %s" % p.stderr[-1000:])
            return 1
        out = subprocess.run([args.dump, "--json", log], capture_output=True, text=True, check=True).stdout
        infos = [json.loads(line) for line in out.splitlines() if '"kind":"info"' in line]
        got = {i["key"]: i["value"] for i in infos if i["key"].startswith("env:")}
        want = {"env:PYTORCH_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:64",
                "env:TF_FORCE_GPU_ALLOW_GROWTH": "true",
                "env:PYTORCH_CUDA_ALLOC_CONF": "garbage_collection_threshold:0.7"}
        if got != want:
            fails.append("INFO env records %s, expected %s" % (got, want))
        if sum(1 for i in infos if i["key"] == "env:PYTORCH_ALLOC_CONF") != 1:
            fails.append("the settings are recorded once, at the first device allocation: %s" % infos)
    for f in fails:
        print("FAIL: " + f)
    print("%d failure(s)" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
