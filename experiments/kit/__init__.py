"""What the papers' experiments share beyond the harness: the epoch driver of every training
experiment (``training``)."""
