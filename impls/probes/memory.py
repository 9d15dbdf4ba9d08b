"""Admission rules for probe memory: refuse a point rather than over-commit a device."""

from __future__ import annotations

GB = 1 << 30
# Fraction of a GPU's free memory a probe may take. Managed memory is the dangerous
# case: asking for more than the card can hold can hang the GPU (shared with others).
HEADROOM = 0.90


def um_refusal(size_bytes: int, free_bytes: list[int], chase_gpu: int = 0,
               headroom: float = HEADROOM, chaser_free: int | None = None) -> str | None:
    """Why a managed allocation of ``size_bytes`` spread over these GPUs is refused, or None.

    Every page may migrate to the chasing GPU, so the whole allocation must fit in
    ``headroom`` of that GPU's free memory (``chaser_free``, or ``free_bytes[chase_gpu]``
    when the chaser is one of the owners), and each owner's initial partition in its own.
    """
    if size_bytes <= 0:
        return "size must be positive"
    if not free_bytes:
        return "no GPU to place managed memory on"
    chaser_bytes = free_bytes[chase_gpu] if chaser_free is None else chaser_free
    if size_bytes > headroom * chaser_bytes:
        return (f"refused: {size_bytes / GB:.3g} GB of managed memory exceeds "
                f"{headroom:.0%} of the chasing GPU's free {chaser_bytes / GB:.1f} GB; "
                f"pages migrate to the chasing GPU, and over-committed managed memory can hang it")
    return _split_refusal(size_bytes, free_bytes, headroom,
                          lambda part, gpu, free: f"refused: partition of {part / GB:.1f} GB exceeds "
                                                  f"{headroom:.0%} of GPU{gpu}'s free {free / GB:.1f} GB")


# Plain device allocations fail cleanly when too large, so they may come closer to the limit.
DEVICE_HEADROOM = 0.97


def device_refusal(size_bytes: int, free_bytes: list[int], headroom: float = DEVICE_HEADROOM) -> str | None:
    """Why ``size_bytes`` split evenly over these GPUs' device memory does not fit, or None."""
    return _split_refusal(size_bytes, free_bytes, headroom,
                          lambda part, gpu, free: f"needs {part / GB:.1f} GB on GPU{gpu}, which has "
                                                  f"{free / GB:.1f} GB free ({headroom:.0%} usable)")


def _split_refusal(size_bytes: int, free_bytes: list[int], headroom: float, why) -> str | None:
    """``why(part, gpu, free)`` of the first GPU whose usable free memory cannot hold its even part
    of ``size_bytes``, or None."""
    part = size_bytes / len(free_bytes)
    short = next((gpu for gpu, free in enumerate(free_bytes) if part > headroom * free), None)
    return None if short is None else why(part, short, free_bytes[short])


def host_refusal(size_bytes: int, available_bytes: int, cap_bytes: int | None = None,
                 headroom: float = 0.75) -> str | None:
    """Why ``size_bytes`` of host memory is refused (too little, or over an explicit cap)."""
    if cap_bytes is not None and size_bytes > cap_bytes:
        return (f"host memory capped at {cap_bytes / GB:.3g} GB for this probe "
                f"(pinning takes time; raise with --param host_max_gb=N)")
    if size_bytes > headroom * available_bytes:
        return (f"needs {size_bytes / GB:.2f} GB of host memory, {available_bytes / GB:.1f} GB "
                f"available ({headroom:.0%} usable)")
    return None
