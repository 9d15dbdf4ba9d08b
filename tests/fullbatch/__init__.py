"""Full-batch GCN (MG-GCN) tests: CPU ranks over gloo here, GPU ranks over NCCL in test_mggcn_gpu."""
