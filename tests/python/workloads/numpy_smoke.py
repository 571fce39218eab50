# A NumPy smoke run for the double-initialisation check: np.linspace, whose
# _array_converter numpy 2.x initialises twice (array_converter_new calls
# PyObject_NewVar, then PyObject_InitVar on the same object), a fixed number
# of times at one line, and a broad sample of other NumPy code that must
# bring no other finding.
import numpy as np

for i in range(7):
    np.linspace(0.0, 1.0, 11)                                      # LINE:linspace

a = np.arange(1000.0).reshape(10, 100)
b = a @ a.T + np.sin(a).sum() + np.sort(a, axis=1)[:, :10].mean()
c = np.concatenate([a, a]).astype(np.float32).T.copy(order="F")
e = np.where(a > 5, a, 0).cumsum()
s = np.char.upper(np.array(["a", "bb"]))
f = np.fft.fft(np.ones(8))
g = np.linalg.inv(np.eye(3) * 2) + np.linalg.svd(np.eye(4))[1].sum()
r = np.rec.fromarrays([np.arange(3), np.ones(3)], names="x,y")
m = np.ma.masked_array([1, 2, 3], mask=[0, 1, 0]).sum()
x = np.datetime64("2024-01-01") + np.arange(3)
y = np.frompyfunc(lambda v: v + 1, 1, 1)(np.arange(3))
z = np.stack([np.zeros(2), np.ones(2)])
w = np.vectorize(lambda v: v * 2)(np.arange(4))
d = np.dtype([("a", np.int32), ("b", np.float64, (2,))])
st = np.zeros(3, dtype=d)
rng = np.random.default_rng(0)
h = np.histogram(rng.normal(size=1000), bins=10)
p = np.polyfit(np.arange(5.0), np.arange(5.0) ** 2, 2)
q = np.einsum("ij,jk->ik", np.ones((3, 3)), np.ones((3, 3)))
u = np.array([1, 2, 3], dtype=object) * 2
v = np.broadcast_to(np.arange(3), (4, 3)).sum(axis=0)
i8 = np.iinfo(np.int8).max + np.finfo(np.float32).eps
sv = np.void(b"ab")
if hasattr(np, "dtypes") and hasattr(np.dtypes, "StringDType"):
    sd = np.array(["x", "yy"], dtype=np.dtypes.StringDType())
print("ok")
