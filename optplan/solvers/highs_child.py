"""Solve one MPS model with HiGHS in a child process (run by file path, not imported).

Why a child process: OR-Tools (CP-SAT) and highspy each ship their own build of
``libhighs.so.1``; whichever loads first wins the soname, and the other then fails to import
(undefined symbols). optplan always loads OR-Tools, so highspy runs where OR-Tools never is.

Usage: ``python highs_child.py MODEL.mps REQUEST.json RESULT.json``. The request holds HiGHS
options, an optional warm start ``{"start": {column name: value}}`` and the wall-clock
``deadline`` (``time.time()``) that becomes HiGHS's time limit once the model is read; the result holds the
model status, the MIP's objective, dual bound, gap, node count and (when HiGHS has a feasible
solution) the column values by name.
"""

import json
import sys
import time


def main(model: str, request: str, result: str) -> None:
    import highspy

    with open(request, encoding="utf-8") as f:
        req = json.load(f)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    for key, value in req.get("options", {}).items():
        h.setOptionValue(key, value)
    h.readModel(model)
    if req.get("deadline") is not None:  # wall-clock time (time.time()) the answer is due
        h.setOptionValue("time_limit", max(req["deadline"] - time.time(), 0.01))
    lp = h.getLp()
    names = list(lp.col_names_)
    start = req.get("start")
    if start:
        sol = highspy.HighsSolution()
        sol.col_value = [float(start.get(n, 0.0)) for n in names]
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    info = h.getInfo()
    out = {
        "status": h.modelStatusToString(h.getModelStatus()),
        "objective": info.objective_function_value,
        "bound": info.mip_dual_bound,
        "gap": info.mip_gap,
        "nodes": int(info.mip_node_count),
        "values": None,
    }
    if info.primal_solution_status == 2:  # kSolutionStatusFeasible
        out["values"] = dict(zip(names, h.getSolution().col_value))
    with open(result, "w", encoding="utf-8") as f:
        json.dump(out, f, allow_nan=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
