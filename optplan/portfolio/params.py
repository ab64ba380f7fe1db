"""The portfolio's settings as one typed value: its tuned time shares, budgets and members.

A ``PortfolioParams`` goes from the planner (``auto``'s option ``params``) down to every stage;
nothing reads a module global that callers change (tests and experiments pass their own). The
search's settings for the searches auto starts are one field (``search``): the search's package
loads its kernels, which a problem the heuristics settle never needs, so the default is taken
from it only when a search starts (``search_params``). Pure Python: reading these loads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optplan.search.params import SearchParams


@dataclass(frozen=True)
class PortfolioParams:
    """How ``auto`` spends its time. Defaults are the tuned values; the comment on each says where
    its figure comes from."""

    # of a single-memory part's time, for the exact search engine when it is registered (CP-SAT and LNS
    # get the rest): on minimalloc/D in 20 s, 0.8 gave 1.0498 x the bound and 0.4 gave 1.0644; equal in 60 s
    search_share: float = 0.8
    # exact engines for single-memory parts, used if registered (looked up by name)
    search_members: tuple[str, ...] = ("search",)
    # larger parts take a member only when its share of the time covers ``search_seconds_per_unit`` per
    # unit: a member cannot be interrupted from here, and on very large parts its set-up and first dives
    # are not (idealloc/S_1, 28,526 buffers: about 0.25 ms per unit for the search's dives)
    search_max_units: int = 5000
    search_seconds_per_unit: float = 1e-3
    # seconds the search runs alone on a part before it races CP-SAT and LNS from a forked process: most
    # parts are answered sooner than a fork (0.1 s) and CP-SAT's model (guillotine-2 at 1 MiB: three parts
    # of milliseconds each; auto 1.7 s wall where search alone took 0.24 s at load 12)
    search_first: float = 0.2
    # a dive of the search costs about this per overlapping pair (S_1, 48M pairs: 0.6-1 s; 62k S_1-shaped,
    # 114M: 2.6-3.9 s; 1M, 1.7G: > 95 s)
    dive_seconds_per_pair: float = 3e-8
    # of the time left: the early search's limit (validating and sending 28k placements back takes
    # seconds at load 15)
    early_share: float = 0.85
    # steps of lower priority (nice) for what races beside the search in feasibility mode (``SearchRace``):
    # the rest takes the CPU the search leaves (an idle core), not the search's. Nice 5 was not enough where
    # the kernel groups a session's processes (autogroup: the search child and the rest share one group's
    # CPU): minimalloc C at load 6.5, auto - search +1.0 s with nice 5, -0.2/-0.3 s with 19
    race_nice: int = 19
    # of the time, for the search minimizing beside the rest in minimize mode (``SearchRace``); 0: no such
    # race. Generated families at 10 s, one memory (experiments/results/minimize.md), against deciding the
    # bound alone for 0.8 of the time: proofs 95 -> 96 of 110 (cuts 66/70, tight 18/20, perturbed A-E
    # 11 -> 12/20), perturbed A-E's 9 unproven 1.0579 -> 1.0422 x the load bound
    floor_race_share: float = 0.9
    # the share of that search's time slices that goes to deciding the proven bound (first), against 1
    # for a plan below its best: 1 and 0.25 (the search alone's) lost pinwheel-12, a 3.8 s decision
    race_floor_share: float = 4.0
    # seconds past the deadline the answer waits for the rest of a race (starved at its priority, or in a
    # step it cannot leave, such as importing OR-Tools: 1.5 s at load 4): the CLI's watchdog ends a process
    # 0.7 s after its planners' deadline at the least (T = 3 s), and the plan is still to be validated and written
    race_grace: float = 0.3
    # of a part's time where units choose memories: the staging relaxation and its selections packed exactly
    staging_share: float = 0.8
    # of the time for one memory's selected units, for the search (CP-SAT gets the rest)
    pack_search_share: float = 0.4
    # of an exact member's time, for CP-SAT's decisions at the proven bound before it minimizes (one
    # memory). They prove most of what auto proves on tight generated instances and several cuts: at
    # 10 s, load 3-7, instance by instance against 0.3: tight 15 -> 16 of 20, held-out tight 7 -> 8 of
    # 10, cuts 64 -> 65 of 70, held-out cuts 66 -> 67 of 70 (experiments/results/minimize.md); the
    # search at the bound with both workers instead slowed these decisions (tight 18 -> 17, held-out 9 -> 8)
    floor_decision_share: float = 0.5
    # units freed by LNS's first move, and the height of its band (fraction of the peak)
    lns_free: int = 40
    lns_band: float = 0.05
    # deterministic seconds an LNS move costs at least (building it, reading it back)
    lns_move_dtime: float = 0.01
    # CPU seconds per unit of ``reduce`` (the problem split into parts, a sub-problem each, in Python;
    # load 5: S_1-shaped 62k in 2 parts 1.4 s, 1M in 48 parts 42.5 s): at a million units the parts'
    # stage is not started unless the time left covers twice that (with no heuristic plan at 1M, 60 s,
    # auto ran 218 s)
    reduce_seconds_per_unit: float = 4e-5
    # one part: no sub-problem to build (idealloc/S_1: 0.13 CPU s)
    reduce_one_part_seconds_per_unit: float = 5e-6
    # split on the arrays (``parts.columns_only``; 1M in 48 parts: 5.5 CPU s at load 5)
    reduce_columns_seconds_per_unit: float = 1e-5
    # CPU seconds to import the exact solvers (OR-Tools' CP-SAT and PuLP after numpy: 0.28-0.39 s idle
    # since pandas is left out, ``optplan.core.cp_sat``; 0.66-0.98 s with it), which nothing
    # interrupts: the exact stage starts only while the time left covers twice that at the present
    # load, else the best heuristic plan is the answer (1000 buffers, 3 s, load 4, no kernels: the
    # import was under way when the CLI's watchdog ended the process, and the plan was lost)
    solvers_import_seconds: float = 0.4
    # problems of up to this many units get the first look (``quick``); 0: none
    quick_units: int = 256
    # CPU seconds the first look may take: it stops before the next heuristic beyond this (the full
    # pipeline then runs them again: on a problem no heuristic settles, this is what the look costs at
    # most, and a pass). Not in deterministic mode, where what runs must not depend on the clock.
    quick_seconds: float = 0.05
    # the search's settings for the searches auto starts (the races change its floor share; beyond their
    # ``max_overlap_pairs`` the search only dives); None: the search's defaults
    search: SearchParams | None = None

    def search_params(self) -> SearchParams:
        """The search's settings for a search auto starts: ``search``, or the search's defaults
        (imported here, when a search starts: the search's package loads its kernels)."""
        if self.search is not None:
            return self.search
        from optplan.search.params import DEFAULTS

        return DEFAULTS

    def racing_search(self, floor_share: float) -> SearchParams:
        """The search's settings with the race's ``floor_share`` (at the bound: ``race_floor_share``;
        beside such a race, 0: all its time goes to a better plan)."""
        return replace(self.search_params(), floor_share=floor_share)

    def changed(self) -> dict[str, object]:
        """The fields that differ from the defaults, for a plan's stats."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != f.default}


DEFAULTS = PortfolioParams()
