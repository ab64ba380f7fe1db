"""optplan's own JSON formats for problems and plans (schemas beside this file, version 1)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from functools import cache
from importlib import resources
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from optplan.core.buffer import Buffer, Gap, Memory, RelativePlacement
from optplan.core.columns import gc_paused
from optplan.core.errors import FormatError, ProblemError
from optplan.core.plan import Layout, Placement, Plan
from optplan.core.problem import Problem

if TYPE_CHECKING:
    import jsonschema

VERSION = 1


@cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    import jsonschema  # here: 0.1 s of every command's start, for JSON files only
    schema = json.loads(resources.files("optplan.formats").joinpath(f"{kind}.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def _check(doc: Any, kind: str, source: str) -> None:
    errors = sorted(_validator(kind).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = _describe(doc, list(e.absolute_path))
        raise FormatError(f"{source}: {where}: {e.message}")


def _describe(doc: Any, path: list) -> str:
    """A JSON path made readable: buffers[3] becomes buffer 'id' when the id is known."""
    if len(path) >= 2 and path[0] == "buffers" and isinstance(path[1], int):
        try:
            bid = doc["buffers"][path[1]].get("id")
        except (AttributeError, IndexError, TypeError):
            bid = None
        head = f"buffer {bid!r}" if isinstance(bid, str) else f"buffers[{path[1]}]"
        return head + (f": field {path[2]!r}" if len(path) > 2 else "")
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path) if path else "document"


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are distinct (json.loads would keep the last of two silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ValueError(f"key {twice!r} appears twice in one object")
    return out


def _load(text: str, source: str) -> Any:
    try:
        with gc_paused():  # a million placements are a million objects, none of them garbage
            return json.loads(text, object_pairs_hook=_unique)
    except json.JSONDecodeError as e:
        raise FormatError(f"{source}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise FormatError(f"{source}: not read: arrays or objects nested too deeply") from None
    except ValueError as e:  # e.g. an integer of more than 4300 digits
        why = str(e).split(";")[0]  # not the advice to call sys.set_int_max_str_digits
        raise FormatError(f"{source}: not read: {why}") from None


def problem_from_json(text: str, source: str = "<json>") -> Problem:
    doc = _load(text, source)
    if isinstance(doc, dict) and doc.get("format") == "optplan-plan":
        raise FormatError(f"{source}: this is a plan, not a problem")
    _check(doc, "problem", source)
    try:
        memories = tuple(Memory(**m) for m in doc.get("memories", [{"name": "mem"}]))
        buffers = tuple(Buffer(**{**b, **{k: tuple(b[k]) for k in ("allowed", "blocked") if k in b},
                                  **({"gaps": tuple(Gap(**g) for g in b["gaps"])} if "gaps" in b else {})})
                        for b in doc["buffers"])
        relative = tuple(RelativePlacement(**r) for r in doc.get("relative", []))
        return Problem(buffers, memories, relative, doc.get("metadata", {}))
    except ProblemError as e:
        raise ProblemError(f"{source}: {e}") from None


def problem_to_json(problem: Problem) -> str:
    defaults = Buffer("x", 0, 0, 1)
    buffers = []
    for b in problem.buffers:
        d = {k: v for k, v in asdict(b).items() if k in ("id", "size", "start", "end") or v != getattr(defaults, k)}
        for k in ("allowed", "blocked"):
            if k in d:
                d[k] = list(d[k])
        if b.gaps:
            d["gaps"] = [{"start": g.start, "end": g.end, **({} if g.window is None else {"window": list(g.window)})}
                         for g in b.gaps]
        buffers.append(d)
    doc = {
        "format": "optplan-problem", "version": VERSION,
        "memories": [asdict(m) for m in problem.memories],
        "buffers": buffers,
        "relative": [asdict(r) for r in problem.relative],
        "metadata": dict(problem.metadata),
    }
    return json.dumps(doc, indent=1) + "\n"


# wall-clock figures: a plan's ``seconds`` and the stats named so (at any depth)
TIMED = ("seconds", "nodes_per_second")


def untimed(x: Any) -> Any:
    """``x`` (a plan's JSON object, or part of one) without its wall-clock figures (``TIMED``): what
    a ``--deterministic`` plan file holds, the same bytes on every run."""
    if isinstance(x, dict):
        return {k: untimed(v) for k, v in x.items() if not k.endswith(TIMED)}
    if isinstance(x, list):
        return [untimed(v) for v in x]
    return x


def plan_to_dict(plan: Plan, placements: bool = True, times: bool = True) -> dict[str, Any]:
    """The plan as one JSON object: the file format and what ``--json`` prints (``placements=False``:
    with an empty ``placements``, for ``plan_to_json`` to fill; ``times=False``: ``untimed``)."""
    doc = {
        "format": "optplan-plan", "version": VERSION,
        "status": plan.status.value, "planner": plan.planner,
        "peak": plan.peak, "lower_bound": plan.lower_bound, "gap": plan.gap, "gap_of": plan.gap_of,
        "seconds": round(plan.seconds, 6), "objective": str(plan.objective),
        "objective_value": plan.objective_value, "objective_bound": plan.objective_bound,
        "objective_components": [list(c) for c in plan.components],
        "message": plan.message, "stats": plan.stats,
        "placements": {k: {"memory": p.memory, "offset": int(p.offset)} for k, p in plan.placements.items()}
        if placements else {},
    }
    return doc if times else untimed(doc)


# one placement as ``json.dumps`` writes it inside the plan object: with ``indent=1`` (the plan
# file) and compact (``--json``, the default separators)
_ENTRY = '  {}: {{\n   "memory": {},\n   "offset": {}\n  }}'
_COMPACT_ENTRY = '{}: {{"memory": {}, "offset": {}}}'


def plan_to_json(plan: Plan, times: bool = True, pretty: bool = True, doc: dict[str, Any] | None = None) -> str:
    """``json.dumps(plan_to_dict(plan, times=times), indent=1 if pretty else None) + "\n"``, byte
    for byte, but with the placements (the last key) formatted in C-level passes over their
    columns: Python's encoder takes 10-20 s over a million of them, this about a second. ``doc``:
    the object to write in place of ``plan_to_dict(plan, placements=False, times=times)`` (the
    caller's additions to it), whose empty ``placements`` get the plan's."""
    head = json.dumps(plan_to_dict(plan, placements=False, times=times) if doc is None else doc,
                      indent=1 if pretty else None)
    if not plan.placements:
        return head + "\n"
    empty = '"placements": {}\n}' if pretty else '"placements": {}}'
    assert head.endswith(empty)
    ids, memories, offsets = _columns(plan.placements)
    encode = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]  # (as json.dumps: ensure_ascii)
    with gc_paused():
        entries = map((_ENTRY if pretty else _COMPACT_ENTRY).format, map(encode, ids), memories, offsets)
        body = (",\n" if pretty else ", ").join(entries)
    if pretty:
        return f"{head[:-4]}{{\n{body}\n }}\n}}\n"
    return f"{head[:-3]}{{{body}}}}}\n"


def _columns(placements: Mapping[str, Placement]) -> tuple[list[str], list[str], list[int]]:
    """The placements' ids, JSON-encoded memory names and offsets (ints), in their order."""
    encode = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]
    if isinstance(placements, Layout):
        names = [encode(n) for n in placements.names]
        return placements.ids, list(map(names.__getitem__, placements.where.tolist())), placements.offset.tolist()
    values = list(placements.values())
    names_of = {m: encode(m) for m in set(map(attrgetter("memory"), values))}
    return (list(placements), list(map(names_of.__getitem__, map(attrgetter("memory"), values))),
            list(map(int, map(attrgetter("offset"), values))))


def plan_document(text: str, source: str = "<json>") -> dict[str, Any]:
    """The plan file's JSON object, checked against the schema. Its placements are checked in
    bulk (jsonschema takes a minute over a million of them): only entries that are not plainly
    ``{"memory": str, "offset": int}`` go through the schema, for its message."""
    doc = _load(text, source)
    placements = doc.get("placements") if isinstance(doc, dict) else None
    if not isinstance(placements, dict) or not placements:
        _check(doc, "plan", source)
        return doc
    _check({**doc, "placements": {}}, "plan", source)
    if not _plain_entries(list(placements.values())):
        odd = {k: v for k, v in placements.items() if not _plain_entries([v])}
        _check({**doc, "placements": odd}, "plan", source)
    return doc


def _plain_entries(entries: list[Any]) -> bool:
    """Every entry is ``{"memory": str, "offset": int}`` (C-level passes over a million of them)."""
    if set(map(type, entries)) != {dict} or set(map(len, entries)) != {2}:
        return False
    try:
        memories, offsets = list(map(itemgetter("memory"), entries)), list(map(itemgetter("offset"), entries))
    except KeyError:
        return False
    return set(map(type, memories)) == {str} and set(map(type, offsets)) == {int}


def placements_of(doc: dict[str, Any], problem: Problem | None = None) -> Mapping[str, Placement]:
    """The plan's placements: a ``Layout`` (arrays, in ``problem``'s buffer order) when they place
    exactly ``problem``'s buffers in its memories at offsets inside int64, else a dict, in which the
    validator finds what is missing, unknown or out of range."""
    raw = doc["placements"]
    if problem is not None and len(raw) == len(problem.buffers) and _plain_entries(list(raw.values())):
        layout = _layout(raw, problem)
        if layout is not None:
            return layout
    return {k: Placement(v["memory"], v["offset"]) for k, v in raw.items()}


def _layout(raw: dict[str, Any], problem: Problem) -> Layout | None:
    ids = problem.columns.ids
    entries: list[Any] = list(raw.values()) if list(raw) == ids else [raw.get(i) for i in ids]
    if None in entries:
        return None  # another set of buffers
    index = {m: k for k, m in enumerate(problem.memory_names)}
    try:
        where = np.fromiter(map(index.__getitem__, map(itemgetter("memory"), entries)), np.int64, len(entries))
        offset = np.fromiter(map(itemgetter("offset"), entries), np.int64, len(entries))
    except (KeyError, OverflowError):
        return None  # an unknown memory, an offset past int64: the validator names them
    return Layout(ids, problem.memory_names, where, offset)

