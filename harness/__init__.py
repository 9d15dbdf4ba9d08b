"""Benchmark-and-reproduction harness for multi-GPU GNN training papers."""

__version__ = "0.1.0"
