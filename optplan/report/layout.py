"""A picture of a plan: one panel per memory, time (steps) on x, address on y.

Buffers are one collection per memory coloured by size (log scale), so 30,000 of them draw as fast
and read as well as 10; a buffer thinner or shorter than a pixel is drawn one pixel wide and tall,
so that the drawing holds every byte the live-bytes curve counts (idealloc/S_1: 28k buffers over 45k
steps, most shorter than a pixel at 1,600 pixels); behind so many, the live bytes as a grey band
from 0, the total the scattered buffers add up to. Over them: the live-bytes curve, the lower bound,
the capacity, and the step of the peak; a peak at its bound is one line, named so. The legend sits
below the panel's step axis, outside the data. The title names the instance and what the plan file says
(planner, status, peak, gap), never re-derived. SVG and HTML carry each buffer's id, size,
lifetime and offset as a hover title.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from optplan.core.errors import OptplanError
from optplan.core.load import usage_curve
from optplan.core.plan import Placement, Plan
from optplan.core.problem import Problem
from optplan.formats.output import atomic_output, check_output
from optplan.report.units import human_bytes, unit_for

EDGE_LIMIT = 2000  # outlines beyond this many rectangles only darken the picture
LEGEND_DROP = 38  # points from a panel's bottom to its legend: below the tick labels and the axis label
PLOT_SHARE = 0.6  # at most this share of the picture's width (and of a panel's height) is the data's


@dataclass(frozen=True)
class PlanHeader:
    """What a plan file says about itself (a CSV plan says nothing: fields None)."""

    planner: str | None = None
    status: str | None = None
    peak: dict[str, int] | None = None
    lower_bound: dict[str, int] | None = None
    gap: float | None = None
    objective: str | None = None  # feasible: no gap (nothing is optimized)

    @classmethod
    def of(cls, plan: Plan) -> PlanHeader:
        return cls(plan.planner, plan.status.value, dict(plan.peak), dict(plan.lower_bound), plan.gap, str(plan.objective))

    @classmethod
    def from_fields(cls, doc: dict | None) -> PlanHeader:
        """From ``read_plan_file``'s fields (None: a CSV plan)."""
        if doc is None:
            return cls()
        return cls(doc.get("planner"), doc["status"], doc.get("peak"), doc.get("lower_bound"), doc.get("gap"), doc.get("objective"))


def pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptplanError("plotting needs matplotlib: pip install 'optplan[plot]'") from None
    plt.rcParams["svg.fonttype"] = "none"  # text stays text: searchable, and small files
    plt.rcParams["svg.hashsalt"] = "optplan"  # the same picture gives the same file
    return plt


def _title(header: PlanHeader, name: str | None = None) -> str:
    where = f"{name}: " if name else ""
    if header.status is None:
        return f"{where}plan from a CSV file (it records no planner, status or gap)"
    gap = "n/a" if header.gap is None else f"{100 * header.gap:.2f}%"
    peak = ", ".join(f"{m} {human_bytes(v)}" for m, v in (header.peak or {}).items())
    if header.objective == "feasible":  # a plan within the capacities is the answer: no gap
        return f"{where}{header.planner}: {header.status} (feasible), peak {peak}"
    return f"{where}{header.planner}: {header.status}, peak {peak}, gap to bound {gap}"


def _at_least_a_pixel(polys: list, pixel: tuple[float, float]) -> list:
    """Each rectangle widened and heightened to ``pixel`` (data units per pixel) where it is
    smaller: a buffer that lives one step among 45,000 still shows where the curve counts it."""
    dx, dy = pixel
    out = []
    for (x0, y0), (x1, _), (_, y1), _ in polys:
        x1, y1 = max(x1, x0 + dx), max(y1, y0 + dy)
        out.append([(x0, y0), (x1, y0), (x1, y1), (x0, y1)])
    return out


def _hover(problem: Problem, placements: Mapping[str, Placement], memory: str) -> tuple[list, list, list]:
    """Rectangles (a buffer with gaps gives several), their buffer sizes, and hover texts."""
    polys, sizes, tips = [], [], []
    for b in problem.buffers:
        p = placements.get(b.id)
        if p is None or p.memory != memory or b.size == 0:
            continue
        size = f"{b.size:,} B" + (f" ({human_bytes(b.size)})" if b.size >= 1024 else "")
        tip = f"{b.id}: {size}, steps [{b.start}, {b.end}), offset {p.offset:,}"
        for t0, t1, y0, y1 in b.footprint():
            polys.append([(t0, p.offset + y0), (t1, p.offset + y0), (t1, p.offset + y1), (t0, p.offset + y1)])
            sizes.append(b.size)
            tips.append(tip)
    return polys, sizes, tips


class _UnitLocator:
    """Ticks at round numbers of the axis' unit (0.25 GiB, not 0.2684 GiB)."""

    def __new__(cls, scale: int) -> Any:
        from matplotlib.ticker import MaxNLocator

        class Located(MaxNLocator):
            def tick_values(self, vmin: float, vmax: float) -> Any:
                return np.asarray(super().tick_values(vmin / scale, vmax / scale)) * scale

        return Located(nbins=8, steps=[1, 2, 2.5, 5, 10])


def _panel(ax: Any, problem: Problem, placements: Mapping[str, Placement], memory: str, header: PlanHeader,
           plt: Any, pixels: tuple[float, float]) -> list[str]:
    """One memory's panel; ``pixels``: the picture's width and the panel's height in pixels."""
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import LogNorm, Normalize
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator
    from matplotlib.transforms import offset_copy

    polys, sizes, tips = _hover(problem, placements, memory)
    mem = problem.memory(memory)
    curve = usage_curve(problem, placements, memory)
    peak = (header.peak or {}).get(memory, int(curve.top.max()) if len(curve.top) else 0)
    bound = (header.lower_bound or {}).get(memory)
    top = max(peak, bound or 0, mem.capacity or 0, 1)
    lo, hi = problem.time_span
    hi = max(hi, lo + 1)
    if polys:
        many = len(polys) > EDGE_LIMIT
        if many:
            polys = _at_least_a_pixel(polys, ((hi - lo) / (PLOT_SHARE * pixels[0]), 1.06 * top / (PLOT_SHARE * pixels[1])))
        lo_size, hi_size = max(min(sizes), 1), max(sizes)
        norm = LogNorm(lo_size, hi_size) if hi_size > 4 * lo_size else Normalize(lo_size - 1, hi_size + 1)  # log where sizes spread
        col = PolyCollection(polys, array=sizes, cmap="viridis", norm=norm, antialiased=not many,
                             edgecolors="none" if many else "black", linewidths=0.3)
        col.set_gid(f"buffers-{memory}")
        ax.add_collection(col)
        bar = plt.colorbar(col, ax=ax, pad=0.01, label="buffer size")
        if isinstance(norm, LogNorm):
            bar.ax.yaxis.set_major_locator(LogLocator(base=4, numticks=12))  # 1 KiB, 4 KiB, 16 KiB, ...
        else:
            bar.set_ticks(sorted(set(sizes))[:6])
        bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: human_bytes(v, 0)))
        bar.ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    if len(curve.times):
        # the live bytes as a band from 0 behind the buffers, and its edge: a buffer too small to see
        # still counts where the eye looks for it (S_1: 574 buffers live at step 33,000 hold 92.5 MB,
        # spread over 730 MB of addresses, most of them a pixel tall)
        band = len(polys) > EDGE_LIMIT  # (few buffers all show, outlined: a band would only fill their gaps)
        if band:
            ax.fill_between(curve.times, curve.live, step="post", color="0.8", alpha=0.5, linewidth=0, zorder=0.5)
        ax.step(curve.times, curve.live, where="post", color="black", linewidth=1,
                label="live bytes (grey: from 0)" if band else "live bytes")
        step = curve.peak_step
        if step is not None:
            ax.axvline(step, color="red", linestyle=":", linewidth=0.8)
            ax.plot([step], [peak], marker="v", color="red", markersize=7, label=f"peak at step {step:,}")
    _levels(ax, peak, bound, mem.capacity)
    unit, scale = unit_for(top)
    ax.yaxis.set_major_locator(_UnitLocator(scale))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y / scale:,g}"))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{int(x):,}"))
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, top * 1.06)
    ax.set_xlabel("step")
    ax.set_ylabel(f"{memory} address ({unit})")
    ax.set_title(f"{memory}: {len({t for t in tips}):,} buffers", fontsize=10, loc="left")
    below = offset_copy(ax.transAxes, fig=ax.figure, y=-LEGEND_DROP, units="points")  # under the step axis's label
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.0), bbox_transform=below, ncol=6, fontsize=9, frameon=False,
              borderaxespad=0.0, handlelength=1.5, columnspacing=1.2)
    return tips


def _levels(ax: Any, peak: int, bound: int | None, capacity: int | None) -> None:
    """The peak, the bound and the capacity as horizontal lines; levels that coincide are one line
    named for all of them (a dashed line over a dash-dotted one hid both)."""
    names: dict[int, list[str]] = {}
    for level, name in ((peak, "peak"), (bound, "lower bound"), (capacity, "capacity")):
        if level is not None:
            names.setdefault(level, []).append(name)
    style = {"peak": ("red", "--"), "lower bound": ("tab:green", "-."), "capacity": ("gray", "-")}
    for level, which in names.items():
        color, line = style[which[0]]
        ax.axhline(level, color=color, linestyle=line, linewidth=1.2, label=f"{' = '.join(which)} {human_bytes(level)}")


def draw_layout(problem: Problem, placements: Mapping[str, Placement], header: PlanHeader, path: str | Path,
                width: int = 1600, dpi: int = 100, name: str | None = None) -> None:
    """Write the picture; the format follows the extension (.png, .svg, .pdf, .html). ``name``: the
    instance, named in the title (e.g. its file's name)."""
    path = Path(path)
    check_output(path, "picture")
    if width < 200 or dpi < 20:
        raise OptplanError(f"--width must be >= 200 pixels and --dpi >= 20, got {width} and {dpi}")
    plt = pyplot()
    used = [m for m in problem.memory_names if any(p.memory == m for p in placements.values())] or list(problem.memory_names)
    height = 0.45 * width
    fig, axes = plt.subplots(len(used), 1, figsize=(width / dpi, height / dpi * len(used)), squeeze=False)
    tips = {m: _panel(ax, problem, placements, m, header, plt, (width, height)) for ax, m in zip(axes[:, 0], used)}
    fig.suptitle(_title(header, name))
    fig.tight_layout()
    try:
        if path.suffix.lower() in (".svg", ".html"):
            _write_svg(fig, path, tips, dpi)
        else:
            save_figure(fig, path, dpi)
    finally:
        plt.close(fig)


def save_figure(fig: Any, path: Path, dpi: int) -> None:
    """Write atomically (a failure leaves no partial picture); SVG and PDF without a date, so that
    the same picture gives the same file."""
    fmt = path.suffix.lower().lstrip(".")
    try:
        with atomic_output(path) as name:  # savefig cannot guess the format from this name
            fig.savefig(name, format=fmt, dpi=dpi, metadata={"Date": None} if fmt in ("svg", "pdf") else None)
    except ValueError as e:
        raise OptplanError(f"{path}: cannot write picture: {e}") from None


def _with_titles(svg: str, tips: dict[str, list[str]]) -> str:
    """Give each rectangle of each memory's collection its hover title, in drawing order."""
    for memory, texts in tips.items():
        start = svg.find(f'<g id="buffers-{html.escape(memory, quote=True)}">')
        if start < 0 or not texts:
            continue
        end = svg.index("</g>", start)
        it = iter(texts)
        body = re.sub(r"/>", lambda _: f"><title>{html.escape(next(it, ''))}</title></path>", svg[start:end])
        svg = svg[:start] + body + svg[end:]
    return svg


def _write_svg(fig: Any, path: Path, tips: dict[str, list[str]], dpi: int) -> None:
    import io

    from optplan.formats import write_text

    buf = io.StringIO()
    fig.savefig(buf, format="svg", dpi=dpi, metadata={"Date": None})
    svg = _with_titles(buf.getvalue(), tips)
    if path.suffix.lower() == ".html":
        body = svg[svg.index("<svg"):]
        svg = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>optplan layout</title></head>\n"
               f"<body style=\"margin:0\">\n{body}</body></html>\n")
    write_text(path, svg)
