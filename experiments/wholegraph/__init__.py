"""WholeGraph (SC'22) artifacts; the paper's testbed was a DGX-A100."""

PAPER_HARDWARE = "DGX-A100: 8x A100 SXM4 over NVSwitch (300 GB/s per direction), CUDA 11.4"

PAPER_TITLE = "WholeGraph: a fast graph neural network training framework with multi-GPU distributed shared memory architecture (SC'22), with NVIDIA's WholeGraph blog"
