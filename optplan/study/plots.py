"""The study's two pictures, as PNG and SVG: each planner's gaps across the instances, and run time
against instance size (log-log)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from optplan.report.layout import pyplot, save_figure
from optplan.study.results import FOUND, Row


def _save(fig, out_dir: Path, stem: str) -> None:  # type: ignore[no-untyped-def]
    for ext in ("png", "svg"):
        save_figure(fig, out_dir / f"{stem}.{ext}", 150)


def gaps_figure(rows: list[Row]):  # type: ignore[no-untyped-def]
    """Gap (%) per run to the reference, one column per planner (best median first), one dot per
    instance; a symmetric-log axis keeps 0.1 % and 1000 % on one picture."""
    from matplotlib.ticker import FuncFormatter

    from optplan.study.summary import heuristics

    plt = pyplot()
    heur = heuristics(rows)
    gaps: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["status"] in FOUND and r["gap_to_best"] not in ("", None, "inf"):
            gaps[str(r["planner"])].append(100 * float(str(r["gap_to_best"])))
    names = sorted(gaps, key=lambda n: (statistics.median(gaps[n]), statistics.fmean(gaps[n])))
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(names) + 2), 4.5))
    for x, n in enumerate(names):
        ys = sorted(gaps[n])
        jitter = [x + 0.25 * ((i * 0.618) % 1 - 0.5) for i in range(len(ys))]
        ax.scatter(jitter, ys, s=14, alpha=0.7, color="tab:blue" if n in heur else "tab:orange", linewidths=0)
        ax.plot([x - 0.3, x + 0.3], [statistics.median(ys)] * 2, color="black", linewidth=1.5)
    ax.set_yscale("symlog", linthresh=1, linscale=0.6)
    top = max((max(v) for v in gaps.values()), default=1.0)
    ticks = [t for t in (0, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000) if t <= max(top * 1.3, 2)]
    ax.set_yticks(ticks, [f"{t:g}%" for t in ticks])
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda *_: ""))
    ax.set_ylim(-0.1, max(top * 1.3, 2))
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
    ax.set_ylabel("gap to the proven optimum (else best known)")
    ax.set_title(f"Gap per planner over {len({r['instance'] for r in rows})} instances "
                 "(one dot per instance; bar: median; orange: exact planners)", fontsize=10)
    ax.grid(axis="y", which="major", alpha=0.3)
    fig.tight_layout()
    return fig


def time_figure(rows: list[Row]):  # type: ignore[no-untyped-def]
    """Seconds per run against buffers, one colour and marker per planner."""
    from matplotlib.ticker import FuncFormatter

    plt = pyplot()
    pts: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for r in rows:
        if r.get("buffers") not in ("", None) and r.get("seconds") not in ("", None):
            pts[str(r["planner"])].append((int(str(r["buffers"])), max(float(str(r["seconds"])), 1e-4)))
    fig, ax = plt.subplots(figsize=(8, 5))
    markers = "os^vD<>ph*XP"
    for k, (n, xy) in enumerate(sorted(pts.items())):
        ax.scatter(*zip(*xy), s=16, label=n, marker=markers[k % len(markers)], color=plt.cm.tab20(k % 20), alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
        axis.set_minor_formatter(FuncFormatter(lambda *_: ""))
    ax.set_xlabel("buffers")
    ax.set_ylabel("seconds per run")
    ax.set_title("Run time against instance size")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def draw_study(rows: list[Row], out_dir: Path) -> None:
    plt = pyplot()
    for stem, make in (("gaps", gaps_figure), ("time", time_figure)):
        fig = make(rows)
        try:
            _save(fig, out_dir, stem)
        finally:
            plt.close(fig)
