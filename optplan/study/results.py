"""``runs.csv``: one row per run, rewritten atomically as runs finish, so an interrupted study
leaves every finished run on disk and resumes from there.

A row's own measurements (status, peak, bound, seconds) never change once written; the columns that
compare it with the other runs of its instance (``best_known``, ``optimum``, ``gap_to_best``) are
derived again on every write, from all rows present.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

from optplan.formats import write_text

COLUMNS = ("instance", "buffers", "steps", "planner", "status", "peak", "lower_bound", "best_known", "optimum",
           "gap_to_bound", "gap_of", "gap_to_best", "seconds", "time_limit", "memory", "peaks", "objective", "version", "message")
FOUND = ("OPTIMAL", "FEASIBLE")

Row = dict[str, object]


def read_rows(path: Path) -> list[Row]:
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        return [dict(r) for r in csv.DictReader(f)]


def _int(v: object) -> int | None:
    return None if v in ("", None) else int(str(v))


def derive(rows: list[Row]) -> None:
    """Fill best_known (lowest peak of any run), optimum (that peak, where some run proved it: an
    OPTIMAL status, or a proven bound as high) and gap_to_best (to the optimum, else the best known)."""
    by_instance: dict[object, list[Row]] = defaultdict(list)
    for r in rows:
        by_instance[r["instance"]].append(r)
    for runs in by_instance.values():
        found = [r for r in runs if r["status"] in FOUND]
        best = min((p for r in found if (p := _int(r["peak"])) is not None), default=None)
        bound = max((b for r in runs if (b := _int(r["lower_bound"])) is not None), default=None)
        proven = best is not None and (any(_int(r["peak"]) == best and r["status"] == "OPTIMAL" for r in found)
                                       or (bound is not None and best <= bound))
        for r in runs:
            peak = _int(r["peak"]) if r["status"] in FOUND else None
            r["best_known"] = "" if best is None else best
            r["optimum"] = best if proven else ""
            if peak is None or best is None:
                r["gap_to_best"] = ""
            else:
                r["gap_to_best"] = 0.0 if peak <= best else (round(peak / best - 1, 6) if best > 0 else "inf")


def write_rows(path: Path, rows: list[Row]) -> None:
    derive(rows)
    rows.sort(key=lambda r: (str(r["instance"]), str(r["planner"])))  # completion order varies; files should not
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    write_text(path, buf.getvalue())
