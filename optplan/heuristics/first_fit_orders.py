"""First fit under several static orders, keeping the best plan (a cheap portfolio).

Which order packs best depends on the instance (size for a few big tensors, area or lifetime
for long-lived activations, start for chains); trying each costs one greedy pass.
"""

from __future__ import annotations

from optplan.core.deadline import Deadline, Pacer
from optplan.core.objective import Objective
from optplan.core.problem import Problem
from optplan.heuristics import orders
from optplan.heuristics.packer import greedy_scored
from optplan.registry import POLL_EVERY, Result, planner

ORDERS = {"size": orders.by_size, "area": orders.by_area, "length": orders.by_length, "start": orders.by_start}


@planner("first-fit-orders", clocks=True)
def first_fit_orders(problem: Problem, deadline: Deadline, objective: Objective | None = None) -> Result:
    """First fit by decreasing size, area, lifetime length and by start; the lowest objective wins.
    An order that would end after the ``deadline`` is not tried (``stats["cut"]``), on problems of
    ``POLL_EVERY`` units or more (below, every order: each costs microseconds, and ``auto`` is
    never worse than this heuristic alone whatever its limit). An order is abandoned once the peaks
    reach the best plan's so far (``greedy_scored``'s ``beat``; ``stats["stopped"]``): it could not win."""
    best, best_value, best_name, messages, stopped = None, float("inf"), None, [], []
    stats: dict[str, object] = {}
    pace = Pacer(deadline)
    for k, (name, order) in enumerate(ORDERS.items()):
        if k and not pace.another() and len(problem.units) >= POLL_EVERY:
            stats["cut"] = f"orders {', '.join(list(ORDERS)[k:])} not tried"
            break
        value, plan = greedy_scored(problem, order(problem), "first", objective, beat=best_value)
        if plan is None:
            stopped.append(name)
        elif value == float("inf"):
            messages.append(f"{name}: {plan().message}")
        elif value < best_value:
            best, best_value, best_name = plan, value, name
    if stopped:  # its peaks reached the best plan's before its last unit: it could not win
        stats["stopped"] = stopped
    note = [f"{deadline.cancelled or 'time limit reached'}: {stats['cut']}"] if "cut" in stats else []
    if best is None:
        return Result(None, message="; ".join(messages + note), stats=stats)
    return Result(best().placements, message="; ".join([f"best order: {best_name}", *note]), stats={"order": best_name, **stats})
