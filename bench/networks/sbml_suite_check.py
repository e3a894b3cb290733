"""Run `sp_ode.from_sbml` on the local-parameter cases of the SBML test suite and compare with its results.

The suite (https://github.com/sbmlteam/sbml-test-suite) is not part of this repository; point
this script at a checkout (or an export of its ``cases/`` folder)::

    python -m bench.networks.sbml_suite_check /path/to/sbml-test-suite [--all] [--json out.json]

For each case whose ``*-model.m`` lists ``LocalParameters`` among its test tags (every case with
``--all``) it reads the case's highest-level SBML file and either records the importer's refusal
(by its message: events, rules, concentrations in a compartment of size ≠ 1, …) or checks the
imported kinetic laws against the case's published values:

* ``cases/semantic`` (deterministic time courses): the reaction-rate equations
  dx/dt = Σ_r ν_r a_r(x) with the imported propensities, integrated by scipy's LSODA at
  rtol 1e-10, against ``*-results.csv`` within the case's own absolute/relative tolerance;
* ``cases/stochastic`` (DSMTS): the mean and standard deviation of the CME on a finite state
  projection, p(t) = exp(tQᵀ)p(0) (``expm_multiply``), against ``*-mean.csv`` / ``*-sd.csv``
  within their rounding: half a unit of the last printed digit, or 5e-7 relative where more
  digits are printed than the suite's analytic values carry (its standard deviations are square
  roots of 7-digit variances).  The FSP indicator outflow·t is printed next to each case.

Prints one line per case (passed / refused / failed, and why) and a count; exits 1 when a
case that was imported disagrees with the suite.
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

import numpy as np


def _settings(case: Path) -> dict:
    out = {}
    for line in (case / f"{case.name}-settings.txt").read_text().splitlines():
        key, _, value = line.partition(":")
        out[key.strip()] = value.strip()
    return out


def _table(path: Path) -> tuple[list[str], np.ndarray]:
    with open(path) as fh:
        rows = list(csv.reader(fh))
    return [h.strip() for h in rows[0]], np.array([[float(v) for v in r] for r in rows[1:] if r])


def _sbml_file(case: Path) -> Path | None:
    files = sorted(case.glob(f"{case.name}-sbml-l*v*.xml"))
    return files[-1] if files else None


def _initial_amounts(path: Path, species: tuple[str, ...]) -> np.ndarray:
    import libsbml

    model = libsbml.readSBMLFromFile(str(path)).getModel()
    out = []
    for sid in species:
        s = model.getSpecies(sid)
        size = model.getCompartment(s.getCompartment()).getSize() if s.getCompartment() else 1.0
        out.append(s.getInitialAmount() if s.isSetInitialAmount() else s.getInitialConcentration() * size)
    return np.array(out, dtype=np.float64)


def _semantic(case: Path, net, path: Path) -> tuple[bool, str]:
    import sympy
    from scipy.integrate import solve_ivp

    settings = _settings(case)
    header, table = _table(case / f"{case.name}-results.csv")
    t = table[:, 0]
    names = [n for n in header[1:] if n in net.species]
    if not names:
        return False, f"none of the result columns {header[1:]} is a species"
    args = [net.symbols[s] for s in (*net.species, *net.parameters)]
    fns = [sympy.lambdify(args, e, modules="numpy") for e in net.propensity_exprs]
    pvals = list(net.parameters.values())
    nu = net.stoichiometry.T.astype(np.float64)

    def rhs(_, x):
        return nu @ np.array([float(f(*x, *pvals)) for f in fns])

    x0 = _initial_amounts(path, net.species)
    sol = solve_ivp(rhs, (t[0], t[-1]), x0, t_eval=t, method="LSODA", rtol=1e-10, atol=1e-14)
    if sol.status != 0:
        return False, f"the reaction-rate ODE failed: {sol.message}"
    atol, rtol = float(settings.get("absolute") or 0), float(settings.get("relative") or 0)
    worst = 0.0
    for name in names:
        got = sol.y[net.species.index(name)]
        want = table[:, header.index(name)]
        worst = max(worst, float(np.max(np.abs(got - want) / (atol + rtol * np.abs(want)))))
    return worst <= 1.0, f"worst |error| / (abs + rel·|expected|) = {worst:.3g} over {names}"


def _stochastic(case: Path, net, path: Path, initial: dict) -> tuple[bool, str]:
    from scipy.sparse.linalg import expm_multiply

    means = sorted(case.glob("*-mean.csv"))
    sds = sorted(case.glob("*-sd.csv"))
    if not means:
        return False, "no -mean.csv"
    header, mean = _table(means[0])
    _, sd = _table(sds[0]) if sds else (header, None)
    t = mean[:, 0]
    peak = max(float(np.max(mean[:, 1:] + 10 * (sd[:, 1:] if sd is not None else 0))), 10.0)
    bounds = {s: int(3 * peak) + 20 for s in net.species}
    space = net.state_space(bounds, initial=initial if len(net.conservation_laws()) else None)
    Q = net.generator(space)
    p0 = np.zeros(space.n)
    p0[space.index(np.array([[initial.get(s, 0) for s in net.species]]))] = 1.0
    o = net.outflow(space)
    worst, leaked = 0.0, 0.0
    digits = {n: _last_digit(means[0], n) for n in header[1:]}
    sd_digits = {n: _last_digit(sds[0], n) for n in header[1:]} if sds else {}
    for k, tk in enumerate(t):
        p = expm_multiply(Q.T * tk, p0) if tk > 0 else p0
        leaked = max(leaked, float(tk * (p @ o)))
        for name in header[1:]:
            if name not in net.species:
                continue
            x = space.states[:, net.species.index(name)]
            m = float(p @ x)
            want = mean[k, header.index(name)]
            worst = max(worst, abs(m - want) / max(digits[name], 5e-7 * abs(want)))
            if sd is not None:
                s = float(np.sqrt(max(p @ x**2 - m**2, 0.0)))
                want = sd[k, header.index(name)]
                worst = max(worst, abs(s - want) / max(sd_digits[name], 5e-7 * abs(want)))
    return worst <= 1.0, (f"worst |error| / rounding = {worst:.3g}; FSP outflow·t ≤ {leaked:.1e} on "
                          f"{space.n} states")


def _last_digit(path: Path, column: str) -> float:
    """Half a unit of the last printed digit of `column` (the rounding of the published values)."""
    with open(path) as fh:
        rows = list(csv.reader(fh))
    j = [h.strip() for h in rows[0]].index(column)
    places = max((len(r[j].split(".")[1]) if "." in r[j] else 0) for r in rows[1:] if r)
    return 0.5 * 10.0**-places


def check_case(case: Path) -> tuple[str, str]:
    from sp_ode.networks.sbml import from_sbml

    path = _sbml_file(case)
    if path is None:
        return "refused", "no SBML file"
    try:
        net, initial = from_sbml(path)
    except (ValueError, TypeError) as exc:   # NetworkError, SBMLFeatureError, NetworkSyntaxError, ...
        return "refused", f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    try:
        ok, why = (_stochastic(case, net, path, initial) if case.parent.name == "stochastic"
                   else _semantic(case, net, path))
    except (ValueError, TypeError) as exc:
        return "refused", f"while solving: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    return ("passed" if ok else "FAILED"), why


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", help="checkout of sbml-test-suite (or a folder holding its cases/)")
    parser.add_argument("--all", action="store_true", help="every case, not only those tagged LocalParameters")
    parser.add_argument("--json", default=None, help="write the table as JSON here")
    args = parser.parse_args(argv)
    root = Path(args.suite) / "cases"
    rows = []
    for folder in ("stochastic", "semantic"):
        for case in sorted(p for p in (root / folder).iterdir() if p.is_dir()):
            model = case / f"{case.name}-model.m"
            if not model.is_file():
                continue
            tags = re.search(r"testTags:(.*)", model.read_text())
            if not args.all and not (tags and "LocalParameters" in tags.group(1)):
                continue
            status, why = check_case(case)
            rows.append({"case": f"{folder}/{case.name}", "status": status, "why": why})
            print(f"{folder}/{case.name}  {status:8s} {why}", flush=True)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("passed", "refused", "FAILED")}
    print(f"{len(rows)} cases: {counts['passed']} passed, {counts['refused']} refused, {counts['FAILED']} failed")
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "cases": rows}, indent=1))
    return 1 if counts["FAILED"] else 0


if __name__ == "__main__":
    sys.exit(main())
