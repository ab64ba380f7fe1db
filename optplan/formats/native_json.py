"""optplan's own JSON formats for problems and plans (schemas beside this file, version 1)."""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from optplan.core.buffer import Buffer, Gap, Memory, RelativePlacement
from optplan.core.errors import FormatError, ProblemError
from optplan.core.plan import Placement, Plan
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


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """The plan as one JSON object: the file format and what ``--json`` prints."""
    return {
        "format": "optplan-plan", "version": VERSION,
        "status": plan.status.value, "planner": plan.planner,
        "peak": plan.peak, "lower_bound": plan.lower_bound, "gap": plan.gap, "gap_of": plan.gap_of,
        "seconds": round(plan.seconds, 6), "objective": str(plan.objective),
        "objective_value": plan.objective_value, "objective_bound": plan.objective_bound,
        "objective_components": [list(c) for c in plan.components],
        "message": plan.message, "stats": plan.stats,
        "placements": {k: {"memory": p.memory, "offset": int(p.offset)} for k, p in plan.placements.items()},
    }


def plan_to_json(plan: Plan) -> str:
    return json.dumps(plan_to_dict(plan), indent=1) + "\n"


def plan_document(text: str, source: str = "<json>") -> dict[str, Any]:
    """The plan file's JSON object, checked against the schema."""
    doc = _load(text, source)
    _check(doc, "plan", source)
    return doc


def placements_of(doc: dict[str, Any]) -> dict[str, Placement]:
    return {k: Placement(v["memory"], v["offset"]) for k, v in doc["placements"].items()}


def placements_from_json(text: str, source: str = "<json>") -> dict[str, Placement]:
    return placements_of(plan_document(text, source))

