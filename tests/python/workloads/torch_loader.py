# PyTorch on the CPU (test_torch_cpu.py): a DataLoader with two forked workers
# (batches through shared memory), two epochs.
import hashlib, sys
import torch
from torch.utils.data import DataLoader, Dataset

class DS(Dataset):
    def __len__(self): return 2000
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(32, generator=g), torch.tensor(float(i % 7))

torch.manual_seed(0)
model = torch.nn.Linear(32, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for epoch in range(2):
    dl = DataLoader(DS(), batch_size=50, shuffle=True, num_workers=2)
    for xb, yb in dl:
        loss = torch.nn.functional.mse_loss(model(xb).squeeze(1), yb)
        opt.zero_grad(); loss.backward(); opt.step()
        losses.append(loss.item())
print("batches", len(losses))
print("final", repr(losses[-1]))
print("losses_sha", hashlib.sha256(repr(losses).encode()).hexdigest()[:16])
