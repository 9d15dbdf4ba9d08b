"""Interface `storage`: a row table spread over ranks (WholeGraph's WholeMemory, XGNN's GGMS).

Addressing modes (WholeGraph blog): ``continuous`` (one address space), ``chunked`` (a
pointer per rank, chunk picked from the global offset) and ``distributed`` (no mapping:
reached through communication). Rows are split contiguously: rank r owns
``[r * rows_per_rank, (r + 1) * rows_per_rank)``.
"""
