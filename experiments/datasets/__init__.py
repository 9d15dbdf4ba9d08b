"""Harness artifacts about the datasets themselves: generation benchmarks of the stand-ins."""

PAPER_TITLE = "The datasets and their stand-ins"
