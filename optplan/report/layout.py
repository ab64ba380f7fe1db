"""A picture of a plan: one panel per memory, time on x, address on y (matplotlib, optional)."""

from __future__ import annotations

from pathlib import Path

from optplan.errors import OptplanError
from optplan.formats.output import atomic_output
from optplan.plan import Plan, usage_curve
from optplan.problem import Problem


def draw_layout(problem: Problem, plan: Plan, path: str | Path, title: str | None = None) -> None:
    """Write a PNG/SVG/PDF (by extension) of the plan's buffers and each memory's live-load curve."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.collections import PolyCollection
    except ImportError:
        raise OptplanError("plotting needs matplotlib: pip install 'optplan[plot]'") from None
    used = [m for m in problem.memory_names if any(p.memory == m for p in plan.placements.values())] or list(problem.memory_names)
    fig, axes = plt.subplots(len(used), 1, figsize=(10, 3.5 * len(used)), squeeze=False)
    for ax, m in zip(axes[:, 0], used):
        polys, colors = [], []
        for i, b in enumerate(problem.buffers):
            p = plan.placements.get(b.id)
            if p is None or p.memory != m or b.size == 0:
                continue
            for t0, t1, y0, y1 in b.footprint():  # gaps leave holes, windows narrow bands
                y0, y1 = p.offset + y0, p.offset + y1
                polys.append([(t0, y0), (t1, y0), (t1, y1), (t0, y1)])
                colors.append(plt.cm.tab20(i % 20))
        ax.add_collection(PolyCollection(polys, facecolors=colors, edgecolors="black", linewidths=0.2))
        curve = usage_curve(problem, plan.placements, m)
        if len(curve.times):
            ax.step(curve.times, curve.live, where="post", color="black", linewidth=1, label="live bytes")
        ax.axhline(plan.peak.get(m, 0), color="red", linestyle="--", linewidth=1, label=f"peak {plan.peak.get(m, 0):,}")
        ax.axhline(plan.lower_bound.get(m, 0), color="green", linestyle=":", linewidth=1,
                   label=f"lower bound {plan.lower_bound.get(m, 0):,}")
        capacity = problem.memory(m).capacity
        if capacity is not None:
            ax.axhline(capacity, color="gray", linewidth=1, label=f"capacity {capacity:,}")
        ax.autoscale_view()
        ax.set_xlabel("time step")
        ax.set_ylabel(f"{m} address")
        ax.legend(loc="upper right", fontsize=7)
    fig.suptitle(title or f"{plan.planner}: {plan.status.value}")
    fig.tight_layout()
    try:
        with atomic_output(path) as name:  # savefig cannot guess the format from this name
            fig.savefig(name, format=Path(path).suffix.lower().lstrip(".") or None)
    except ValueError as e:
        raise OptplanError(f"{path}: cannot write picture: {e}") from None
    finally:
        plt.close(fig)
