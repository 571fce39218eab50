# PyTorch on the CPU (test_torch_cpu.py, bench/torch_cpu.py): a small MLP trained
# on random data with autograd and Adam on two intra-op threads, torch.save and
# torch.load, and the CUDA queries with no device.  argv[1]: steps (300).
import hashlib, os, sys, tempfile
import torch

torch.manual_seed(0)
torch.set_num_threads(2)
print("threads", torch.get_num_threads())
print("cuda", torch.cuda.is_available(), torch.cuda.device_count())
x = torch.randn(512, 64)
y = torch.randn(512, 1)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
for step in range(int(sys.argv[1]) if len(sys.argv) > 1 else 300):
    idx = torch.randint(0, 512, (64,))
    loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
    if step % 50 == 0:
        print("step", step, repr(loss.item()))
print("final", repr(losses[-1]))
print("losses_sha", hashlib.sha256(repr(losses).encode()).hexdigest()[:16])
with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, "m.pt")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, p)
    st = torch.load(p)
    m2 = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                             torch.nn.Linear(128, 128), torch.nn.ReLU(),
                             torch.nn.Linear(128, 1))
    m2.load_state_dict(st["model"])
    print("reload_equal", all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), m2.state_dict().values())))
    print("reload_out_equal", torch.equal(model(x), m2(x)))
