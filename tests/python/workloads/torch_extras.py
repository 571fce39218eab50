# PyTorch on the CPU (test_torch_cpu.py): autograd.grad, torch.jit.script, and
# the torch.cuda calls that must fail cleanly without a GPU; with argv[1]
# "compile" also torch.compile (inductor needs a C++ compiler).
import sys
import torch
torch.manual_seed(0)
x = torch.randn(10, requires_grad=True)
y = (x.sin() * x).sum()
(g,) = torch.autograd.grad(y, x, create_graph=True)
(g2,) = torch.autograd.grad(g.sum(), x)
print("grad", repr(g.sum().item()), repr(g2.sum().item()))
print("gradcheck", torch.autograd.gradcheck(lambda a: (a.sin() * a).sum(), (torch.randn(5, dtype=torch.double, requires_grad=True),)))

@torch.jit.script
def f(a: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        a = a * 2 + 1
    return a
print("jit", f(torch.ones(3), 4).tolist())
print("jit_graph_nodes", len(list(f.graph.nodes())))

def tryit(name, fn):
    try:
        r = fn()
        print(name, "ok", r)
    except Exception as e:
        print(name, "raised", type(e).__name__, str(e).splitlines()[0][:100])

tryit("memory_allocated", lambda: torch.cuda.memory_allocated())
tryit("memory_reserved", lambda: torch.cuda.memory_reserved())
tryit("memory_stats", lambda: len(torch.cuda.memory_stats()))
tryit("empty_cache", lambda: torch.cuda.empty_cache())
tryit("mem_get_info", lambda: torch.cuda.mem_get_info())
tryit("max_memory_allocated", lambda: torch.cuda.max_memory_allocated())
tryit("memory_summary", lambda: len(torch.cuda.memory_summary()))
tryit("set_per_process_memory_fraction", lambda: torch.cuda.set_per_process_memory_fraction(0.5))
tryit("zeros_cuda", lambda: torch.zeros(1, device="cuda"))
tryit("init", lambda: torch.cuda.init())
tryit("current_device", lambda: torch.cuda.current_device())
tryit("get_device_name", lambda: torch.cuda.get_device_name(0))
tryit("pin_memory", lambda: torch.ones(4).pin_memory().is_pinned())
tryit("is_available_after", lambda: torch.cuda.is_available())
if len(sys.argv) > 1 and sys.argv[1] == "compile":
    def h(a):
        return (a.sin() ** 2 + a.cos() ** 2).sum()
    try:
        ch = torch.compile(h)
        print("compile", round(ch(torch.randn(100)).item(), 4))
    except Exception as e:
        print("compile raised", type(e).__name__, str(e).splitlines()[0][:100])
