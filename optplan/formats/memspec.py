"""Memories declared on the command line: ``--memory sram:4KiB:align=64 --memory dram``.

A spec is ``name[:capacity][:key=value...]``, fastest memory first. The capacity is a byte count
with an optional unit (B, KiB, MiB, GiB; also KB, MB, GB as powers of 1000); without one the
memory is unbounded. Keys: ``align`` (offset alignment in bytes), ``weight`` (weight of its peak)
and ``base`` (base address, for reports and front ends).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from optplan.core.buffer import Memory
from optplan.core.errors import OptplanError

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
          "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "kb": 10**3, "mb": 10**6, "gb": 10**9}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]*)")
_KEYS = {"align": "alignment", "alignment": "alignment", "weight": "weight", "base": "base_address"}


def parse_size(text: str) -> int:
    """Bytes from ``4096``, ``4KiB``, ``1.5MiB``, ``2GB``; OptplanError for anything else."""
    m = _SIZE.fullmatch(text.strip())
    unit = None if m is None else _UNITS.get(m[2].lower())
    if m is None or unit is None:
        raise OptplanError(f"not a size: {text!r} (use bytes or a unit: 4096, 64KiB, 2MiB, 1GiB)")
    value = float(m[1]) * unit if "." in m[1] else int(m[1]) * unit
    if value != int(value):
        raise OptplanError(f"not a whole number of bytes: {text!r}")
    return int(value)


def parse_memory(spec: str) -> Memory:
    """One ``--memory`` spec as a Memory (OptplanError naming the spec when it is malformed)."""
    name, *fields = spec.split(":")
    try:
        if not re.fullmatch(r"[A-Za-z_][\w.-]*", name):
            raise OptplanError(f"memory name {name!r} must start with a letter and hold letters, digits, _ . -")
        options: dict[str, int | None] = {}
        for i, f in enumerate(fields):
            key, eq, value = f.partition("=")
            if not eq:
                if i or "capacity" in options:
                    raise OptplanError(f"{f!r}: the capacity comes right after the name; other fields are key=value")
                options["capacity"] = None if f.lower() in ("", "inf", "unbounded") else parse_size(f)
            elif key.strip().lower() in _KEYS:
                options[_KEYS[key.strip().lower()]] = parse_size(value) if key != "weight" else int(value)
            else:
                raise OptplanError(f"unknown key {key!r} (known: align, weight, base)")
        return Memory(name, **options)  # type: ignore[arg-type]
    except (OptplanError, ValueError) as e:
        raise OptplanError(f"--memory {spec!r}: {e} (expected name[:capacity][:align=N], e.g. sram:4KiB:align=64)") from None


def parse_memories(specs: Sequence[str]) -> tuple[Memory, ...]:
    """The memories of several ``--memory`` specs, fastest first."""
    return tuple(parse_memory(s) for s in specs)
