"""Harness artifacts about the datasets themselves: generation benchmarks of the stand-ins."""
