"""Why the systems the harness re-implements do not run as their own packages here.

Shown by `harness list` and report captions beside each re-implementation (``register_impl(...,
reimplements=..., real_package=...)``). Checked under torch 2.13 with pip from PyPI.
"""

QUIVER = ("torch-quiver 0.1.1, PyPI's only release, is source only: it builds its GPU sampler and feature store "
          "only with nvcc and CUDA at install time (CPU-only here), and `import quiver` needs torch-sparse, also "
          "source only on PyPI")
DGL_C = ("DGL+C is XGNN's configuration of DGL: GPU sampling and a per-GPU feature cache, which DGL's PyPI builds "
         "(CPU builds) cannot run")
PAGRAPH = "PaGraph's code is not a package on PyPI"
CAGNET = ("CAGNET's code is not a package on PyPI: its GCN scripts need a CUDA extension (sparse_coo_tensor_cpp) "
          "built with nvcc against one torch, and its current 1D path exchanges only the rows each tile needs "
          "(all-to-all), not the broadcasts of the published 1D algorithm MG-GCN compared against")
