"""The SBML Discrete Stochastic Models Test Suite (DSMTS) through `from_sbml` and the FSP transient solver.

The suite is the ``cases/stochastic`` folder of https://github.com/sbmlteam/sbml-test-suite; it is
not part of this repository.  Point the script at a checkout (or an export holding ``cases/``)::

    python -m bench.networks.dsmts_check /path/to/sbml-test-suite --json results/networks/dsmts.json --table docs/bench/dsmts_table.md

For every case: its highest-level SBML file goes through ``sp_ode.from_sbml``; a refusal is
recorded by its message (events, rate rules, …).  An imported case is solved for p(t) by
``sp_ode.transient_distribution`` (finite state projection grown until the leaked mass is below
``--tol``; uniformization; docs/theory.md §7.10) at the suite's output times, which gives a
*certified interval* for every mean and standard deviation (FSP leak × the moment-growth bound, the
integration's rounding).  The case passes when every published value (``*-mean.csv``,
``*-sd.csv``) lies in its interval widened by the published value's own rounding (half a unit of
its last printed digit, or 1e-6 relative where more digits are printed than the suite's analytic
values carry: measured against closed forms, the published standard deviations are off by up to 8.9e-7
relative, and an observable a·X + b is published as a × the rounded value of X; see PUBLISHED_RELATIVE).  No Monte-Carlo
tolerance is used: the FSP is exact up to its bound.  ``worst`` is the largest distance of a
published value from its interval, in units of that rounding (≤ 1 passes).

An output the certificate cannot bound (an observable that is not affine in the counts, a network
whose count-raising propensities are not affine) makes the case "refused" with that reason.
A case listed in DISPUTED (its published values are shown not to be the model's law, with the evidence
named there) that misses them is "disputed", not "FAILED".  Exit status 1 when an imported case fails.

Events (time- or state-triggered assignments) are read with ``from_sbml(..., with_events=True)`` and
represented exactly (``sp_ode.networks.events``, docs/theory.md §7.14).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from bench._common import render_block

# Grow the projection until the leaked part of the second moments is below this: the certified intervals
# are then far narrower than the published values' rounding (1e-5 of means ~100).
MOMENT_TOL = 1e-9
# The published values' own accuracy, measured against closed forms: standard deviations are off by up to
# 8.9e-7 relative (case 00004, t = 1: the closed form Var = X0(λ+μ)/(λ−μ)·e^{(λ−μ)t}(e^{(λ−μ)t} − 1) gives
# SD 1.4383127938, published 1.43831151), and an observable a·X + b is published as a × (the rounded value
# of X) (case 00019: y = 2X, SD 9.09668 = 2 × 4.54834 where 2·SD(X) = 9.0966888).
PUBLISHED_RELATIVE = 1e-6
# Uniformization steps allowed per projection (the fast birth–death cases need ~10⁵)
MAX_STEPS = 2_000_000
# Cases whose published values are not the law of the model as written, with the evidence.  Such a case is
# still solved and compared; when it misses the published values it is reported "disputed" (not passed, and
# not a failure of the solver), with the distance.  Nothing else is exempted.
DISPUTED = {
    "00033": "the published values are not this model's law: 10⁶ independent SSA runs (bench/networks/dsmts_00033_ssa.py, "
             "docs/bench/dsmts_00033.md) agree with the FSP (DSMTS's own statistics |Z| ≤ 2.2, |Y| ≤ 2.3) and reject "
             "the published means (|Z| up to 44)",
}


def _settings(case: Path) -> dict:
    out = {}
    for line in (case / f"{case.name}-settings.txt").read_text().splitlines():
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


def _table(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path) as fh:
        rows = [r for r in csv.reader(fh) if r]
    return [h.strip().strip('"') for h in rows[0]], rows[1:]


def _rounding(text: str, value: float, scale: float = 1.0) -> float:
    """The published value's accuracy: half a unit of its last digit (× |a|₁ for an observable a·X + b), or
    PUBLISHED_RELATIVE of it, whichever is larger."""
    places = len(text.split(".")[1]) if "." in text else 0
    return max(0.5 * 10.0**-places * max(scale, 1.0), PUBLISHED_RELATIVE * abs(value))


def _sbml_file(case: Path) -> Path | None:
    files = sorted(case.glob(f"{case.name}-sbml-l*v*.xml"))
    return files[-1] if files else None


def check_case(case: Path, tol: float) -> dict:
    from sp_ode.networks.cme.transient import transient_distribution
    from sp_ode.networks.events import EventError
    from sp_ode.networks.network import TruncationError
    from sp_ode.networks.sbml import from_sbml

    row = {"case": case.name, "status": "refused", "why": "", "n": None, "leaked": None}
    path = _sbml_file(case)
    if path is None:
        row["why"] = "no SBML file"
        return row
    settings = _settings(case)
    outputs = [v.strip() for v in settings.get("variables", "").split(",") if v.strip()]
    try:
        net, initial, events = from_sbml(path, with_events=True)
    except (ValueError, TypeError) as exc:   # NetworkError, SBMLFeatureError, NetworkSyntaxError, ...
        row["why"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        return row
    means = sorted(case.glob("*-mean.csv"))
    sds = sorted(case.glob("*-sd.csv"))
    if not means:
        row["why"] = "no -mean.csv"
        return row
    hm, rm = _table(means[0])
    hs, rs = _table(sds[0]) if sds else (hm, None)
    times = np.array([float(r[0]) for r in rm])
    for v in outputs:
        if v not in net.species and v not in net.observables:
            row["why"] = f"output {v!r} is neither a species nor an observable of the imported network"
            return row
    t0 = time.perf_counter()
    try:
        res = transient_distribution(net, initial, times, tol=tol, moment_tol=MOMENT_TOL, max_steps=MAX_STEPS,
                                     events=events)
    except (TruncationError, EventError) as exc:
        row["why"] = f"TruncationError: {str(exc)[:200]}"
        return row
    row.update(n=res.space.n, leaked=float(res.leaked[-1]), method=res.method,
               projections=len(res.expansions), seconds=time.perf_counter() - t0)
    if res.moment_bound_reason:
        row["why"] = f"no moment bound: {res.moment_bound_reason}"
        return row
    worst, widest, where = 0.0, 0.0, ""
    for v in outputs:
        iv = res.intervals(v)
        if iv is None:
            row["why"] = f"output {v!r} is not affine in the counts: no certified interval for its moments"
            return row
        (mlo, mhi), (slo, shi) = iv
        scale = float(res.affine_form(v)[0].sum())    # an observable a·X + b is published as a × rounded X
        for kind, header, rows, lo, hi in (("mean", hm, rm, mlo, mhi), ("sd", hs, rs, slo, shi)):
            if rows is None or v not in header:
                continue
            j = header.index(v)
            for k, r in enumerate(rows):
                want = float(r[j])
                unit = _rounding(r[j].strip(), want, scale)
                outside = max(lo[k] - want, want - hi[k], 0.0) / unit
                widest = max(widest, (hi[k] - lo[k]) / unit)
                if outside > worst:
                    worst, where = outside, f"{v}-{kind} at t = {times[k]:g}"
    row["worst"], row["widest_interval"] = worst, widest
    row["status"] = "passed" if worst <= 1.0 else "FAILED"
    row["why"] = (f"every published mean/SD inside its certified interval ± rounding (worst {worst:.3g}"
                  + (f", {where}" if where else "") + f"; widest interval {widest:.2g} roundings); FSP leak "
                  f"{res.leaked[-1]:.1e} on {res.space.n} states, {len(res.expansions)} projection(s)")
    if worst > 1.0:
        row["why"] = f"{where}: the published value is {worst:.3g} roundings outside its certified interval"
        if case.name in DISPUTED:
            row["status"] = "disputed"
            row["why"] += f"; {DISPUTED[case.name]}"
    return row


def table(record: dict) -> str:
    """The case-by-case page body (counts, then one row per case) from a record of this script (``--json``)."""
    rows, command, commit = record["cases"], record["command"], record.get("suite_commit")
    counts = {s: sum(r["status"] == s for r in rows) for s in ("passed", "refused", "disputed", "FAILED")}
    lines = [f"Command: `{command}`" + (f" (suite commit {commit})" if commit else "")
             + ". The method and the tolerance: [the DSMTS page](dsmts.md).",
             "",
             f"**{counts['passed']} passed, {counts['refused']} refused, {counts['disputed']} disputed (published "
             f"values not the model's law), {counts['FAILED']} failed** "
             f"of {len(rows)} cases.", "",
             "| case | result | why |", "| --- | --- | --- |"]
    for r in rows:
        why = r["why"].replace("|", "\\|")
        lines.append(f"| stochastic/{r['case']} | {r['status']} | {why} |")
    return "\n".join(lines) + "\n"


def write_table(rows: list[dict], path: Path, command: str, suite_commit: str | None) -> None:
    """The page docs/bench/dsmts_table.md (`bench.render` regenerates it from the record the same way)."""
    body = table({"cases": rows, "command": command, "suite_commit": suite_commit})
    path.write_text("# The SBML stochastic test suite, case by case\n\n" + render_block("dsmts_cases", body))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", help="checkout of sbml-test-suite (or a folder holding its cases/)")
    ap.add_argument("--tol", type=float, default=1e-12, help="largest leaked mass of the projection (default 1e-12)")
    ap.add_argument("--cases", nargs="*", default=None, help="case numbers (default: every case)")
    ap.add_argument("--json", default=None, help="write the record here")
    ap.add_argument("--table", default=None, help="write the markdown table here")
    ap.add_argument("--commit", default=None, help="the suite's commit, for the record")
    args = ap.parse_args(argv)
    root = Path(args.suite) / "cases" / "stochastic"
    if not root.is_dir():
        print(f"dsmts_check: error: {str(root)!r} is not a folder (give the suite's checkout)", file=sys.stderr)
        return 2
    rows = []
    for case in sorted(p for p in root.iterdir() if p.is_dir()):
        if args.cases and case.name not in args.cases and case.name.lstrip("0") not in args.cases:
            continue
        row = check_case(case, args.tol)
        rows.append(row)
        print(f"stochastic/{case.name}  {row['status']:8s} {row['why']}", flush=True)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("passed", "refused", "disputed", "FAILED")}
    print(f"{len(rows)} cases: {counts['passed']} passed, {counts['refused']} refused, {counts['disputed']} disputed, "
          f"{counts['FAILED']} failed")
    command = "python -m bench.networks.dsmts_check SUITE" + (f" --tol {args.tol:g}" if args.tol != 1e-12 else "")
    if args.json:
        Path(args.json).write_text(json.dumps({"command": command, "suite_commit": args.commit, "tol": args.tol,
                                               "load_average": os.getloadavg(), "counts": counts, "cases": rows},
                                              indent=1, default=float))
    if args.table:
        write_table(rows, Path(args.table), command, args.commit)
    return 1 if counts["FAILED"] else 0


if __name__ == "__main__":
    sys.exit(main())
