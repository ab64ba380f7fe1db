"""The search's settings as one typed value: the tuned budgets and shares, and its pruning rules.

A ``SearchParams`` goes from the planner (option ``params``) to the engine and the instance
builder; nothing reads a module global that callers change. The portfolio passes its own (its
race gives the bound a larger share) and the plan's ``stats["search_params"]`` shows the fields
that differ from the defaults. Pure Python: reading the settings loads no numba.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, fields

Rules = namedtuple("Rules", ["dominance", "sections", "lift", "twins", "decomposition", "hatless", "valleys", "tight",
                             "forced"])
Rules.__doc__ = """Pruning rules that can be switched off one by one (``pruning``'s docstring; MiniMalloc's
``SolverParams`` is the model). Each is sound on its own: switching any off changes node counts, never
the answer. ``lift`` only sharpens the section check's thresholds. The order rule and the canonical
floors are the search itself, not switches; the failed-state table is switched off by ``table_slots=0``."""
ALL_RULES = Rules(True, True, True, True, True, True, True, True, True)


@dataclass(frozen=True)
class SearchParams:
    """How the search spends its time. Defaults are the tuned values; the comment on each says
    where its figure comes from."""

    # Search nodes per deterministic second: one process's rate, measured on a 2-core machine, was 39k
    # nodes/s on minimalloc/D and 89k on E, so a deterministic limit takes between half and 1.3x as long.
    nodes_per_second: int = 50_000
    # the node limit of every ordering's first run in a decision (each round multiplies it by four)
    first_limit: int = 2000
    # the node limit of one restart ordering's single run
    restart_nodes: int = 1 << 16
    # of a minimization slice, for proving the bound while a better plan is sought too; above 1 (auto's
    # race: PortfolioParams.race_floor_share) the bound goes first, so a bound decided in its first slice does
    # not wait; 0: the bound is left to someone else (auto's race decides it), all time to a better plan
    floor_share: float = 0.25
    # feasibility at a capacity above the proven bound: decisions at the bound and at the capacity take
    # turns (``engine``'s floor_probe): the bound's first slice in seconds (0: none), and its slices' share
    # of the capacity's
    floor_probe_seconds: float = 0.1
    floor_probe_share: float = 0.5
    # deterministic seconds a lowest-offset dive of a large instance costs per unit (idealloc/S_1:
    # 0.85 CPU s for 28,526 units)
    dive_seconds_per_unit: float = 3e-5
    # seconds the other workers of a decision wait before they join the first: most decisions end sooner,
    # and an idle thread costs nothing where a running one takes CPU and the GIL from the first (generated
    # cuts, load 5: 10 of 140 decisions went from 5-15 ms to 15-30 ms without the wait)
    race_delay: float = 0.005
    # a decision on fewer units, or with less time, runs in one thread: it ends in a few nodes (a time part
    # of a generated cut: 1-36 units), and starting a thread under load took longer than its few milliseconds
    race_min_units: int = 32
    race_min_seconds: float = 0.05
    # failed-state table slots per ordering and process: 2 words a slot (16 MiB, touched lazily); < 2: none
    table_slots: int = 1 << 20
    # the pruning rules on (tests switch them off one by one)
    rules: Rules = ALL_RULES
    # beyond this many overlapping pairs (units sharing a time step) the search's adjacency lists cost too
    # much memory: the instance is "large" and gets lowest-offset dives only, no search
    max_overlap_pairs: int = 4_000_000

    def changed(self) -> dict[str, object]:
        """The fields that differ from the defaults (rules: those switched off), for a plan's stats."""
        out: dict[str, object] = {}
        for f in fields(self):
            value, default = getattr(self, f.name), f.default
            if value != default:
                out[f.name] = {r: on for r, on in value._asdict().items() if not on} if f.name == "rules" else value
        return out


DEFAULTS = SearchParams()
