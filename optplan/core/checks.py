"""The checks a Problem runs on construction: every error names the buffer (or memory) and the
field, so planners can trust what they are given."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from optplan.core.buffer import INT64_MAX, Buffer, Gap, Memory, RelativePlacement
from optplan.core.errors import ProblemError

# what a name may not hold: control characters (Unicode category Cc) and lone surrogates (not
# Unicode text: no UTF-8 file can hold one, so a plan naming one could not be written as CSV)
_NOT_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def text_error(name: str) -> str | None:
    """What makes ``name`` unfit for an id or a memory name (see ``_NOT_TEXT``), or None."""
    m = _NOT_TEXT.search(name)
    if m is None:
        return None
    c = m.group()
    what = "a lone surrogate (not valid Unicode text)" if "\ud800" <= c <= "\udfff" else "a control character"
    return f"contains {what}, U+{ord(c):04X}"


def check_ids(ids: list[str]) -> None:
    """Buffer ids (strings by now) are text without control characters: one search over them all
    joined (a million in milliseconds), a look at each only to name the culprit."""
    if _NOT_TEXT.search("".join(ids)) is None:
        return
    bad = next(i for i in ids if text_error(i))
    raise ProblemError(f"buffer {bad!r}: field 'id': {text_error(bad)}")


def items_of(field: str, value: object, kind: type) -> tuple[Any, ...]:
    """``value`` as a tuple, once it is a collection of ``kind`` objects (a string is not a
    collection of memories, nor is None), so that no later check meets an object it cannot read."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ProblemError(f"problem: field {field!r}: must be a sequence of {kind.__name__}, got {type(value).__name__} "
                           f"{value!r:.60}")
    items = tuple(value)
    if set(map(type, items)) - {kind}:
        culprit = next(x for x in items if not isinstance(x, kind))
        raise ProblemError(f"problem: field {field!r}: must hold {kind.__name__} objects, got {type(culprit).__name__} "
                           f"{culprit!r:.60}")
    return items


def check_parts(buffers: object, memories: object, relative: object, metadata: object) -> tuple[tuple[Any, ...], ...]:
    """A Problem's collections as tuples (``items_of``); its metadata a mapping."""
    if not isinstance(metadata, Mapping):
        raise ProblemError(f"problem: field 'metadata': must be a mapping, got {type(metadata).__name__} {metadata!r:.60}")
    return (items_of("buffers", buffers, Buffer), items_of("memories", memories, Memory),
            items_of("relative", relative, RelativePlacement))


def check_range(where: str, values: Iterable[tuple[str, object]]) -> None:
    """Integers must lie in [-2^63, 2^63 - 1] (non-integers are reported by the other checks)."""
    for name, v in values:
        if is_int(v) and not -INT64_MAX - 1 <= v <= INT64_MAX:  # type: ignore[operator]
            raise ProblemError(f"{where}: field '{name}': {v} does not fit a 64-bit integer (at most 2^63-1)")


def check_live_load(buffers: Sequence[Buffer]) -> None:
    """The bytes live at one time (all memories together) must fit int64. Exact in Python
    integers; the sweep runs only when the sizes together exceed 2^63-1."""
    if sum(b.size for b in buffers) <= INT64_MAX or any(isinstance(b.start, tuple) for b in buffers):
        return  # (vector clocks order steps only partly: their loads are the clocks module's)
    events = sorted((t, d, i) for i, b in enumerate(buffers) if b.size for t, d in ((b.start, 1), (b.end, -1)))
    load = 0
    for t, d, i in events:  # ends (-1) sort before starts at equal times: half-open lifetimes
        load += d * buffers[i].size
        if load > INT64_MAX:
            raise ProblemError(f"buffer {buffers[i].id!r}: field 'size': with it the live load at step {t} is "
                               f"{load} bytes, more than 2^63-1")


def check_memories(memories: tuple[Memory, ...]) -> None:
    if not memories:
        raise ProblemError("problem: field 'memories': at least one memory is required")
    seen = set()
    for m in memories:
        where = f"memory {m.name!r}"
        if not isinstance(m.name, str) or not m.name:
            raise ProblemError(f"{where}: field 'name': must be a non-empty string")
        if text_error(m.name):
            raise ProblemError(f"{where}: field 'name': {text_error(m.name)}")
        if m.name in seen:
            raise ProblemError(f"{where}: field 'name': duplicate memory name")
        seen.add(m.name)
        check_range(where, ((f, getattr(m, f)) for f in ("capacity", "alignment", "weight", "base_address")))
        if m.capacity is not None and (not is_int(m.capacity) or m.capacity < 0):
            raise ProblemError(f"{where}: field 'capacity': must be a non-negative integer or null, got {m.capacity!r}")
        if not is_int(m.alignment) or m.alignment < 1:
            raise ProblemError(f"{where}: field 'alignment': must be a positive integer, got {m.alignment!r}")
        if m.weight is not None and (not is_int(m.weight) or m.weight < 0):
            raise ProblemError(f"{where}: field 'weight': must be a non-negative integer, got {m.weight!r}")
        if not is_int(m.base_address) or m.base_address < 0:
            raise ProblemError(f"{where}: field 'base_address': must be a non-negative integer, got {m.base_address!r}")


def is_plain(b: Buffer) -> bool:
    """A buffer that ``check_buffer`` passes for certain, tested cheaply: only its plain fields
    set, each valid (a million buffers are checked in a second instead of five)."""
    return (type(b.size) is int and type(b.start) is int and type(b.end) is int and type(b.alignment) is int
            and type(b.id) is str and b.id != "" and 0 <= b.size <= INT64_MAX and b.start < b.end
            and -INT64_MAX <= b.start and b.end <= INT64_MAX and b.end - b.start <= INT64_MAX and 1 <= b.alignment <= INT64_MAX
            and b.gaps == () and b.allowed is None and b.blocked == () and b.fixed_memory is None
            and b.fixed_offset is None and b.hint_memory is None and b.hint_offset is None
            and (b.benefit is None or (type(b.benefit) is int and b.benefit >= 0)))


def check_buffer(b: Buffer, mems: Mapping[str, Memory]) -> None:
    where = f"buffer {b.id!r}"
    if not isinstance(b.id, str) or not b.id:
        raise ProblemError(f"{where}: field 'id': must be a non-empty string")
    for name in ("size", "alignment"):
        if not is_int(getattr(b, name)):
            raise ProblemError(f"{where}: field '{name}': must be an integer, got {getattr(b, name)!r}")
    check_range(where, ((f, getattr(b, f)) for f in ("size", "start", "end", "alignment", "fixed_offset", "hint_offset")))
    if b.size < 0:
        raise ProblemError(f"{where}: field 'size': must be >= 0, got {b.size}")
    if isinstance(b.start, tuple) or isinstance(b.end, tuple):
        _check_clock(b, where)
    else:
        for name in ("start", "end"):
            if not is_int(getattr(b, name)):
                raise ProblemError(f"{where}: field '{name}': must be an integer, got {getattr(b, name)!r}")
        if b.start >= b.end:
            raise ProblemError(f"{where}: field 'end': lifetime [{b.start}, {b.end}) is empty (start must be < end)")
        if b.end - b.start > INT64_MAX:
            raise ProblemError(f"{where}: field 'end': lifetime [{b.start}, {b.end}) is longer than 2^63-1 steps")
    if b.alignment < 1:
        raise ProblemError(f"{where}: field 'alignment': must be >= 1, got {b.alignment}")
    if b.benefit is not None and (not is_int(b.benefit) or b.benefit < 0):
        raise ProblemError(f"{where}: field 'benefit': must be a non-negative integer, got {b.benefit!r}")
    if b.gaps != ():
        _check_gaps(b, where)
    _check_memory_names(b, where, mems)
    if b.hint_offset is not None and (not is_int(b.hint_offset) or b.hint_offset < 0):
        raise ProblemError(f"{where}: field 'hint_offset': must be a non-negative integer, got {b.hint_offset!r}")
    allowed = set(b.allowed) if b.allowed is not None else set(mems)
    usable = [m for m in mems if m in allowed and m not in b.blocked]
    if b.fixed_memory is not None and b.fixed_memory not in usable:
        raise ProblemError(f"{where}: field 'fixed_memory': {b.fixed_memory!r} is not allowed for this buffer")
    if not usable:
        raise ProblemError(f"{where}: field 'allowed': no memory is left after the blocklist")
    if b.fixed_offset is not None:
        if not is_int(b.fixed_offset) or b.fixed_offset < 0:
            raise ProblemError(f"{where}: field 'fixed_offset': must be a non-negative integer, got {b.fixed_offset!r}")
        if b.fixed_offset + b.size > INT64_MAX:
            raise ProblemError(f"{where}: field 'fixed_offset': {b.fixed_offset} + size {b.size} passes 2^63-1")
        targets = [b.fixed_memory] if b.fixed_memory is not None else usable
        for m in targets:
            mem = mems[m]
            align = math.lcm(b.alignment, mem.alignment)
            if b.fixed_offset % align:
                raise ProblemError(f"{where}: field 'fixed_offset': {b.fixed_offset} is not a multiple of the alignment {align} in memory {m!r}")
            if mem.capacity is not None and b.fixed_offset + b.size > mem.capacity:
                raise ProblemError(f"{where}: field 'fixed_offset': [{b.fixed_offset}, {b.fixed_offset + b.size}) exceeds the capacity {mem.capacity} of memory {m!r}")


def _check_memory_names(b: Buffer, where: str, mems: Mapping[str, Memory]) -> None:
    """``allowed`` and ``blocked`` are collections of memory names (a single name is not one: it
    would be read letter by letter), ``fixed_memory`` and ``hint_memory`` a name or None."""
    for name in ("allowed", "blocked"):
        names = getattr(b, name)
        if names is None and name == "allowed":
            continue
        if isinstance(names, (str, bytes, Mapping)) or not isinstance(names, Iterable):
            hint = f" (one memory: ({names!r},))" if isinstance(names, str) else ""
            raise ProblemError(f"{where}: field '{name}': must be a collection of memory names, got "
                               f"{type(names).__name__} {names!r:.60}{hint}")
        for m in names:
            if not isinstance(m, str) or m not in mems:
                raise ProblemError(f"{where}: field '{name}': unknown memory {m!r}")
    for name in ("fixed_memory", "hint_memory"):
        m = getattr(b, name)
        if m is not None and (not isinstance(m, str) or m not in mems):
            raise ProblemError(f"{where}: field '{name}': unknown memory {m!r}")


def _check_clock(b: Buffer, where: str) -> None:
    for name in ("start", "end"):
        v = getattr(b, name)
        if not isinstance(v, tuple) or not v or not all(is_int(x) for x in v):
            raise ProblemError(f"{where}: field '{name}': a vector clock must be a non-empty list of integers, got {v!r}")
    if len(b.start) != len(b.end):  # type: ignore[arg-type]
        raise ProblemError(f"{where}: field 'end': {len(b.end)} streams, but 'start' has {len(b.start)}")  # type: ignore[arg-type]
    if any(s > e for s, e in zip(b.start, b.end)) or b.start == b.end:  # type: ignore[arg-type]
        raise ProblemError(f"{where}: field 'end': lifetime {list(b.start)} -> {list(b.end)} is empty or reversed "  # type: ignore[arg-type]
                           "(end must be >= start in every stream and > in one)")


def one_stream(b: Buffer) -> Buffer:
    """A one-stream vector clock is a scalar lifetime (its gaps' clocks too)."""
    if isinstance(b.start, (tuple, list)) and isinstance(b.end, (tuple, list)) and len(b.start) == len(b.end) == 1:
        gaps = tuple(replace(g, start=g.start[0], end=g.end[0]) if isinstance(g, Gap) and isinstance(g.start, tuple)
                     and isinstance(g.end, tuple) and len(g.start) == len(g.end) == 1 else g for g in b.gaps)
        return replace(b, start=b.start[0], end=b.end[0], gaps=gaps)
    return b


def stream_count(buffers: Sequence[Buffer]) -> int:
    """1 for scalar lifetimes; the clock length when every buffer has a vector clock."""
    lengths = {len(b.start) if isinstance(b.start, tuple) else 0 for b in buffers}
    if lengths <= {0}:
        return 1
    if len(lengths) > 1:
        def streams(b: Buffer) -> int:
            return len(b.start) if isinstance(b.start, tuple) else 0

        first = buffers[0]
        culprit = next(b for b in buffers if streams(b) != streams(first))
        raise ProblemError(f"buffer {culprit.id!r}: field 'start': every buffer needs a vector clock of "
                           f"{streams(first) or 'as many'} streams like buffer {first.id!r} (a scalar is the one-stream case)")
    return lengths.pop()


def _check_gaps(b: Buffer, where: str) -> None:
    where = f"{where}: field 'gaps'"
    if not isinstance(b.gaps, tuple):
        raise ProblemError(f"{where}: must be a tuple of Gap, got {b.gaps!r}")
    for g in b.gaps:
        if not isinstance(g, Gap):
            raise ProblemError(f"{where}: must hold Gap(start, end, window) entries, got {g!r}")
        _check_window(b, g, where)
    if isinstance(b.start, tuple):
        _check_clock_gaps(b, where)
        return
    previous, idle = None, 0
    for g in b.gaps:
        if not is_int(g.start) or not is_int(g.end):
            raise ProblemError(f"{where}: start and end must be integers, got {g.start!r} and {g.end!r}")
        check_range(where, (("start", g.start), ("end", g.end)))
        span = f"gap [{g.start}, {g.end})"
        if g.start >= g.end:
            raise ProblemError(f"{where}: {span} is empty (start must be < end)")
        if g.start < b.start or g.end > b.end:
            raise ProblemError(f"{where}: {span} is not inside the lifetime [{b.start}, {b.end})")
        if previous is not None and g.start < previous.end:
            raise ProblemError(f"{where}: {span} starts before the previous gap [{previous.start}, {previous.end}) ends "
                               "(gaps must be sorted and must not overlap)")
        if g.window is None:
            idle += g.end - g.start
        previous = g
    if b.gaps and idle == b.end - b.start:
        raise ProblemError(f"{where}: full gaps cover the whole lifetime [{b.start}, {b.end}); a buffer must be active at some step")


def _span(g: Gap) -> str:
    if isinstance(g.start, tuple) and isinstance(g.end, tuple):
        return f"gap {list(g.start)} -> {list(g.end)}"
    return f"gap [{g.start}, {g.end})"


def _check_window(b: Buffer, g: Gap, where: str) -> None:
    w = g.window
    if w is None:
        return
    if not isinstance(w, tuple) or len(w) != 2 or not all(is_int(x) for x in w):
        raise ProblemError(f"{where}: {_span(g)}: window must be a pair of integers (lo, hi), got {w!r}")
    if w[0] == w[1]:
        raise ProblemError(f"{where}: {_span(g)}: window [{w[0]}, {w[1]}) is empty (leave the window out for a full gap)")
    if not 0 <= w[0] < w[1] <= b.size:
        raise ProblemError(f"{where}: {_span(g)}: window [{w[0]}, {w[1]}) must satisfy 0 <= lo < hi <= size {b.size}")


def _check_clock_gaps(b: Buffer, where: str) -> None:
    """Vector clocks: a gap is a span of clocks inside the lifetime, after the previous gap
    (``optplan.core.clocks``); the buffer must hold bytes in some span."""
    def le(x: tuple[int, ...], y: tuple[int, ...]) -> bool:
        return all(a <= c for a, c in zip(x, y))

    k, t, active = len(b.start), b.start, False
    for g in b.gaps:
        for name in ("start", "end"):
            v = getattr(g, name)
            if not isinstance(v, tuple) or len(v) != k or not all(is_int(x) for x in v):
                raise ProblemError(f"{where}: a gap's {name} must be a vector clock of {k} integers like the "
                                   f"buffer's lifetime {list(b.start)} -> {list(b.end)}, got {v!r}")
            check_range(where, ((name, x) for x in v))
        if not le(g.start, g.end) or g.start == g.end:
            raise ProblemError(f"{where}: {_span(g)} is empty or reversed (end must be >= start in every stream and > in one)")
        if not le(b.start, g.start) or not le(g.end, b.end):
            raise ProblemError(f"{where}: {_span(g)} is not inside the lifetime {list(b.start)} -> {list(b.end)} in every stream")
        if not le(t, g.start):
            raise ProblemError(f"{where}: {_span(g)} starts before the previous gap ends in some stream "
                               "(gaps must follow one another)")
        active = active or t != g.start or g.window is not None
        t = g.end
    if not active and t == b.end:
        raise ProblemError(f"{where}: full gaps cover the whole lifetime {list(b.start)} -> {list(b.end)}; "
                           "a buffer must be active in some span")
