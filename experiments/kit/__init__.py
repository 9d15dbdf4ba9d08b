"""What the papers' experiments share beyond the harness: the measurement drivers, which run an
implementation under the timing engine (harness/timing.py) and check what it returned, so that
impls/ holds implementations only.

- ``training``: the epoch driver of every training experiment and the reading of its rows;
- ``samplers``: samplers and append-uniques timed on ranks over fresh seed batches;
- ``probes``: the pointer-chase and random-read probes, timed over never-reread lines;
- ``layers``: one GNN layer's forward + backward, per op implementation;
- ``placement_loading``: a placement's feature loading measured on real ranks.
"""
