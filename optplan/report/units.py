"""Byte counts for people: 1.50 MiB rather than 1572864."""

from __future__ import annotations

UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def unit_for(n: float) -> tuple[str, int]:
    """The largest binary unit that keeps ``n`` at least 1 (bytes below 1 KiB)."""
    k = 0
    while k + 1 < len(UNITS) and abs(n) >= 1024 ** (k + 1):
        k += 1
    return UNITS[k], 1024 ** k


def human_bytes(n: int | float | None, digits: int = 2) -> str:
    if n is None:
        return "unbounded"
    unit, scale = unit_for(n)
    return f"{int(n)} B" if scale == 1 else f"{n / scale:.{digits}f} {unit}"
