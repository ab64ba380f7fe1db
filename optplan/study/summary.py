"""``summary.md``: how far each heuristic is from the best plan anyone found (proven optimal where a
run proved it), instance by instance and over the whole study."""

from __future__ import annotations

import statistics
from collections import defaultdict

from optplan.study.results import FOUND, Row


def _f(v: object) -> float | None:
    return None if v in ("", None) else float(str(v))


def _pct(g: float | None) -> str:
    return "-" if g is None else "inf" if g == float("inf") else f"{100 * g:.2f}%"


def heuristics(rows: list[Row]) -> set[str]:
    from optplan import registry

    return set(registry.heuristic_names()) & {str(r["planner"]) for r in rows}


def planner_table(rows: list[Row]) -> list[str]:
    """One line per planner: gaps to the reference (proven optimum, else best known), wins, time."""
    heur = heuristics(rows)
    by_planner: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_planner[str(r["planner"])].append(r)
    best_heur: dict[object, int] = {}
    for r in rows:
        if r["planner"] in heur and r["status"] in FOUND:
            best_heur[r["instance"]] = min(best_heur.get(r["instance"], 1 << 62), int(str(r["peak"])))
    out = ["| planner | runs | plans | mean gap | median gap | max gap | at reference | wins among heuristics "
           "| mean s | max s |", "| --- |" + " ---: |" * 9]
    def mean_gap(n: str) -> float:
        gaps = [g for r in by_planner[n] if (g := _f(r["gap_to_best"])) is not None]
        return statistics.fmean(gaps) if gaps else float("inf")

    order = sorted(by_planner, key=lambda n: (n not in heur, mean_gap(n), n))  # heuristics best first
    for name in order:
        runs = by_planner[name]
        gaps = [g for r in runs if (g := _f(r["gap_to_best"])) is not None]
        secs = [s for r in runs if (s := _f(r["seconds"])) is not None]
        wins = sum(1 for r in runs if r["status"] in FOUND and best_heur.get(r["instance"]) == int(str(r["peak"])))
        out.append(f"| {name} | {len(runs)} | {len(gaps)} | {_pct(statistics.fmean(gaps) if gaps else None)} "
                   f"| {_pct(statistics.median(gaps) if gaps else None)} | {_pct(max(gaps, default=None))} "
                   f"| {sum(g == 0 for g in gaps)} | {wins if name in heur else '-'} "
                   f"| {statistics.fmean(secs) if secs else 0:.2f} | {max(secs, default=0):.2f} |")
    return out


def instance_table(rows: list[Row]) -> list[str]:
    """One line per instance: its reference, the best and worst heuristic, and each exact run."""
    heur = heuristics(rows)
    by_instance: dict[object, list[Row]] = defaultdict(list)
    for r in rows:
        by_instance[r["instance"]].append(r)
    exact = sorted({str(r["planner"]) for r in rows} - heur)
    out = ["| instance | buffers | lower bound | best known | best / bound | proven optimal | best heuristic | worst heuristic | "
           + " | ".join(exact) + " |", "| --- |" + " ---: |" * (7 + len(exact))]
    for inst, runs in by_instance.items():
        h = sorted(((g, str(r["planner"])) for r in runs if r["planner"] in heur and (g := _f(r["gap_to_best"])) is not None))
        tied = sum(g == h[0][0] for g, _ in h) if h else 0
        bound = max((int(str(r["lower_bound"])) for r in runs if r["lower_bound"] not in ("", None)), default=None)
        first = runs[0]
        cells = [str(inst), f"{int(str(first['buffers'])):,}" if first.get("buffers") not in ("", None) else "-",
                 *_reference_cells(runs, bound), "yes" if first["optimum"] not in ("", None) else "no",
                 f"{h[0][1]}{f' (+{tied - 1} tied)' if tied > 1 else ''} {_pct(h[0][0])}" if h else "-",
                 f"{h[-1][1]} {_pct(h[-1][0])}" if h else "-"]
        for name in exact:
            mine = [r for r in runs if r["planner"] == name]
            cells.append(f"{mine[0]['status']} {_pct(_f(mine[0]['gap_to_best']))} in {_f(mine[0]['seconds']) or 0:.1f} s"
                         if mine else "-")
        out.append("| " + " | ".join(cells) + " |")
    return out


def _reference_cells(runs: list[Row], bound: int | None) -> list[str]:
    """'lower bound', 'best known', 'best / bound' of one instance. Several memories: the best
    run's peak per memory and its own gap (the objective's one number is no byte count)."""
    best = runs[0]["best_known"]
    if best in ("", None):
        return ["-" if bound is None else f"{bound:,}", "-", "-"]
    top = next(r for r in runs if r["status"] in FOUND and str(r["peak"]) == str(best))
    peaks = str(top.get("peaks") or "").split()
    if len(peaks) > 1:
        gap = _f(top["gap_to_bound"])
        per_memory = ", ".join(f"{m} {int(v):,}" for m, v in (p.rsplit(":", 1) for p in peaks))
        what = f"{top.get('gap_of')} " if top.get("gap_of") else ""  # gaps of different quantities differ in kind
        return ["-", per_memory, "-" if gap is None else f"{what}{1 + gap:.4f}"]
    return ["-" if bound is None else f"{bound:,}", f"{int(str(best)):,}",
            f"{int(str(best)) / bound:.4f}" if bound else "-"]


def summary_markdown(rows: list[Row], preface: list[str] | None = None) -> str:
    proven = len({r["instance"] for r in rows if r["optimum"] not in ("", None)})
    instances = len({r["instance"] for r in rows})
    versions = sorted({str(r.get("version")) for r in rows if r.get("version")})
    lines = ["# Optimality-gap study", "", *(preface or []),
             f"{instances} instances, {len(rows)} runs; the optimum is proven for {proven} of them. "
             "A gap is peak / reference - 1, the reference being the proven optimum where a run proved it "
             "(status OPTIMAL, or a plan at a proven lower bound) and otherwise the lowest peak any run found. "
             "Several memories: 'best known' is the best run's peak per memory and 'best / bound' its gap "
             "(of the objective's first quantity not at its bound, named: 'benefit', or a memory's peak); runs.csv "
             "has each run's 'peaks', 'gap_of' and its 'objective' in words ('peak' there is the objective's one number that ranks the runs). "
             "Time: seconds of each run, including its bound and validation.",
             f"Code: {', '.join(versions) or 'unknown'}.", "", "## Per planner", "", *planner_table(rows), "",
             "## Per instance (gap to the reference)", "", *instance_table(rows), ""]
    return "\n".join(lines)
