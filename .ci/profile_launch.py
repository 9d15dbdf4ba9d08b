"""Host-side cost of the sampling launch path on one GPU (developer profile, printed; not a result):
CuPy kernel launches through impls/core/cuda.launch and bare, torch allocations and a read-back,
and whole calls of append-unique and of one path_doubling hop at the size of hop 1 of a [30,30,30] x
512 mini-batch, where launches, not the GPU, set the time.

    PYTHONPATH=$PWD python .ci/profile_launch.py
"""
import time, numpy as np, torch, cupy as cp
from impls.core import cuda
from impls.sampling.gpu import KERNELS
dev = torch.device("cuda:0"); torch.cuda.set_device(0)
x = torch.zeros(1024, dtype=torch.int32, device=dev)
args = (cuda.ptr(x), np.int64(0), np.int64(0), cuda.ptr(x))
def bench(label, f, n=2000):
    for _ in range(50): f()
    torch.cuda.synchronize(); t=time.perf_counter()
    for _ in range(n): f()
    t1=time.perf_counter(); torch.cuda.synchronize()
    print(f"{label}: {(t1-t)/n*1e6:.1f} us per call (host)")
bench("cuda.launch dm_count", lambda: KERNELS.launch(dev, "unique_dense.cu", "dm_count", 1, 256, args))
fn = cuda._function(KERNELS / "unique_dense.cu", "dm_count", 0)
st = cuda._stream(0)


def withctx():
    with cp.cuda.Device(0), st:
        fn((1,), (256,), args, shared_mem=0)


bench("fn under with", withctx)
bench("fn(stream=)", lambda: fn((1,), (256,), args, shared_mem=0, stream=st))
bench("fn bare", lambda: fn((1,), (256,), args))
bench("torch.empty", lambda: torch.empty(1000, dtype=torch.int64, device=dev))
bench("torch.zeros", lambda: torch.zeros(1000, dtype=torch.int64, device=dev))
bench("torch.cumsum", lambda: torch.cumsum(x, 0))
bench("torch.current_stream", lambda: torch.cuda.current_stream(dev).cuda_stream)
bench("x.data_ptr", lambda: cuda.ptr(x))
bench("np.int64", lambda: np.int64(5))
def sync(): x[:2].tolist()
bench("tolist sync", sync, 500)
# a whole append-unique call on tiny input
from harness import registry
registry.discover()
for name in ("hash_append", "dense_append"):
    u = registry.get_impl("unique", name).factory(dev)
    t = torch.arange(512, device=dev); nb = torch.randint(0, 2_000_000, (15360,), device=dev)
    bench(f"{name} 512+15360", lambda: u.append_unique(t, nb, check=False, id_bound=2_000_000), 300)
from experiments.kit.samplers import UniformGraph
g = UniformGraph.build("uniform:2000000:50", 1.0, 0)
s = registry.get_impl("sampling", "path_doubling").factory(dev, g.indptr, g.indices)
bench("path_doubling 512x30", lambda: s.sample(t, 30, check=False), 300)
