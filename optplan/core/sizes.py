"""Byte counts in messages: ``99.66 MiB`` rather than ``104499200``, and per-memory figures as
``sram 4.00 KiB, dram 1.21 MiB`` rather than a dict's repr. In the core, so that every layer's
messages (a planner's, the validator's, the report's) say them one way."""

from __future__ import annotations

from collections.abc import Mapping


def size_text(n: int | None) -> str:
    """Bytes for people: 4,096 B, 1.21 MiB (None: unbounded)."""
    if n is None:
        return "unbounded"
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if abs(n) >= 1 << shift:
            return f"{n / (1 << shift):.2f} {unit}"
    return f"{n:,} B"


def sizes_text(per_memory: Mapping[str, int | None]) -> str:
    """``mem 99.66 MiB``; several memories joined by commas, in the mapping's order."""
    return ", ".join(f"{m} {size_text(v)}" for m, v in per_memory.items())


def exact_size(n: int) -> str:
    """Bytes where the exact count matters (a capacity proof): ``100 bytes``, ``1,048,576 bytes
    (1.00 MiB)``."""
    return f"{n:,} bytes" if abs(n) < 1024 else f"{n:,} bytes ({size_text(n)})"
