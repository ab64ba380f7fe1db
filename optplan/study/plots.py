"""The study's two pictures, as PNG and SVG: each planner's gaps across the instances, and run time
against instance size (log-log)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from optplan.report.layout import pyplot, save_figure
from optplan.study.results import FOUND, Row


def _save(fig, out_dir: Path, stem: str) -> None:  # type: ignore[no-untyped-def]
    for ext in ("png", "svg"):
        save_figure(fig, out_dir / f"{stem}.{ext}", 150)


def gaps_figure(rows: list[Row]):  # type: ignore[no-untyped-def]
    """Peak / reference per run, one column per planner (best median first), one dot per instance."""
    plt = pyplot()
    ratios: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if r["status"] in FOUND and r["gap_to_best"] not in ("", None, "inf"):
            ratios[str(r["planner"])].append(1 + float(str(r["gap_to_best"])))
    names = sorted(ratios, key=lambda n: (sorted(ratios[n])[len(ratios[n]) // 2], max(ratios[n])))
    fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(names) + 2), 4.5))
    for x, n in enumerate(names):
        ys = sorted(ratios[n])
        jitter = [x + 0.25 * ((i * 0.618) % 1 - 0.5) for i in range(len(ys))]
        ax.scatter(jitter, ys, s=14, alpha=0.7, color="tab:blue", linewidths=0)
        ax.plot([x - 0.3, x + 0.3], [ys[len(ys) // 2]] * 2, color="black", linewidth=1.5)
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
    ax.set_ylabel("peak / reference (proven optimum or best known)")
    ax.set_title(f"Gap per planner over {len({r['instance'] for r in rows})} instances (bar: median)")
    ax.axhline(1, color="green", linewidth=0.8, linestyle=":")
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def time_figure(rows: list[Row]):  # type: ignore[no-untyped-def]
    """Seconds per run against buffers, one colour and marker per planner."""
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
