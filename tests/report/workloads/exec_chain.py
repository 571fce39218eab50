# A process tree with an exec'd image: this program (the root) starts a
# child that allocates, then replaces itself (os.execv) with another Python
# program, which starts a grandchild and allocates 3 x 2 MiB host buffers.
#   exec_chain.py            the root
# prints {"root": pid, "child": pid, "grandchild": pid} on stdout.
import json
import os
import subprocess
import sys

STAGE = sys.argv[1] if len(sys.argv) > 1 else "root"
if STAGE == "root":
    out = subprocess.run([sys.executable, __file__, "child"], stdout=subprocess.PIPE, check=True).stdout
    d = json.loads(out)
    d["root"] = os.getpid()
    print(json.dumps(d))
elif STAGE == "child":
    keep = bytearray(2 << 20)
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, __file__, "image", str(os.getpid())])
else:   # the image the child exec'd: same pid
    keep = [bytearray(2 << 20) for _ in range(3)]                             # LINE:image
    g = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], stdout=subprocess.PIPE,
                       check=True).stdout
    print(json.dumps({"child": os.getpid(), "before_exec": int(sys.argv[2]), "grandchild": int(g)}))
