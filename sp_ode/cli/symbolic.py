"""`sp-ode symbolic FILE`: the exact p_st of a generator with symbolic rates, and checks of a claimed formula.

FILE holds a generator as `i -> j : rate` lines, a matrix of sympy expressions or
JSON (format: `sp_ode.symbolic.io`).  The command

1. computes p_st by the Markov chain tree theorem (docs/theory.md §3.1, T1) and prints
   it with its common denominator written once (`--latex`: LaTeX `aligned`);
2. certifies Qᵀp = 0 and 1ᵀp = 1 exactly (`SymbolicStationary.verify`);
3. with `--claim FILE`, checks a claimed formula exactly (`verify_stationary`) and, when
   it is false, prints each leftover (Qᵀp_claimed)_j factored;
4. with `--reversibility`, decides detailed balance and Kolmogorov's cycle criterion
   (reported; they do not change the verdict, since a non-reversible chain is not an error).

`--json` prints one object (`p`: the n entries as sympy-parsable strings, `passed`);
`--out` writes `report.json` and `p_st.tex` into a folder, or one report when it ends in
`.json` or `.tex`; an existing report there is refused before any work unless `--overwrite`.
Without `--out` each run writes into a fresh folder `out/symbolic/DATE/TIME`
(`out/symbolic/latest` links the newest), so the same query can be repeated.  A claim right up to normalisation is reported as "proportional
to p_st (normalisation c = …)".  `--timeout SECONDS` bounds the symbolic work (checked
between steps, with a progress bar on stderr): past it the command stops with one line
saying where (exit 3).  Exit 0 when the certificate (and the claim) hold, 1 when not, 2 for a
bad file (one line naming file, line or field, and rule).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from sp_ode.cli.common import BUILTIN_HELP, EXIT_FAILED, EXIT_OK, EXIT_RUNTIME, UsageError, refuse_existing, run_folder
from sp_ode.core.files import atomic_write_bytes, dumps, write_json
from sp_ode.symbolic.io import GeneratorFileError, read_claim, read_generator
from sp_ode.symbolic.reversibility import detailed_balance, kolmogorov_criterion
from sp_ode.symbolic.stationary import MAX_TREES, SymbolicTimeoutError, symbolic_stationary, verify_stationary

HELP = BUILTIN_HELP["symbolic"]


def add_arguments(parser) -> None:
    parser.add_argument("file", help="generator: `i -> j : rate` lines, a matrix of expressions, or .json")
    parser.add_argument("--claim", default=None, metavar="FILE",
                        help="claimed p_st: JSON list of n expressions, or text, one `STATE : expr` per line")
    parser.add_argument("--reversibility", action="store_true",
                        help="also decide detailed balance and Kolmogorov's cycle criterion")
    parser.add_argument("--latex", action="store_true", help="print p_st as LaTeX (aligned, one denominator)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", default=None,
                        help="folder for report.json and p_st.tex, or a .json/.tex file "
                             "(default: a fresh out/symbolic/DATE/TIME, linked as out/symbolic/latest)")
    parser.add_argument("--max-trees", type=int, default=None, metavar="N",
                        help="refuse generators with more than N spanning in-trees (default 250000)")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier report in --out")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="stop the symbolic work after SECONDS (checked between steps) with a message saying where")


def _out_target(out: str | None) -> tuple[Path | None, Path | None]:
    """(json path, tex path) to write; either may be None. Without `--out`, a fresh run folder (`run_folder`)."""
    target = Path(out) if out is not None else run_folder("symbolic")
    suffix = target.suffix.lower()
    if suffix in (".json", ".tex"):
        if target.is_dir():
            raise UsageError(f"`--out` {str(target)!r} is a directory; name a new .json/.tex file or a folder.")
        return (target, None) if suffix == ".json" else (None, target)
    if target.exists() and not target.is_dir():
        raise UsageError(f"`--out` {str(target)!r} is a file; give a folder, or a path ending in .json or .tex.")
    return target / "report.json", target / "p_st.tex"


def run(args) -> int:
    import sympy


    json_path, tex_path = _out_target(args.out) if args.out is not None else (None, None)
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"`--timeout` must be a positive number of seconds; got {args.timeout}.")
    try:
        gen = read_generator(args.file)
        claim = read_claim(args.claim, gen) if args.claim else None
    except GeneratorFileError as exc:
        raise UsageError(str(exc)) from None
    if args.out is None:  # the inputs are valid: a fresh run folder, never an earlier run's
        json_path, tex_path = _out_target(None)
    elif not args.overwrite:  # before any symbolic work
        refuse_existing([json_path, tex_path], what="a `sp-ode symbolic` report")
    labels = list(gen.states)
    deadline = None if args.timeout is None else time.perf_counter() + args.timeout
    try:
        try:
            result = symbolic_stationary(gen.Q, max_trees=args.max_trees or MAX_TREES, max_seconds=args.timeout,
                                         progress=True)
        except SymbolicTimeoutError:
            raise
        except (TypeError, ValueError) as exc:  # sign, irreducibility, size: a property of the file's generator
            raise UsageError(f"{gen.path}: {_with_labels(str(exc), labels)}") from None
        cert = result.verify()
        ccert = None if claim is None else verify_stationary(
            gen.Q, claim, states=labels, progress=True,
            max_seconds=None if deadline is None else max(deadline - time.perf_counter(), 1e-3))
    except SymbolicTimeoutError as exc:
        print(f"sp-ode symbolic: stopped: {exc} (--timeout {args.timeout:g})", file=sys.stderr)
        return EXIT_RUNTIME
    nums, den = result.common_form
    record: dict = {
        "file": gen.path,
        "n": gen.n,
        "states": labels,
        "p": [str(sympy.factor(nums[r] / den)) if len(str(den)) < 400 else f"({nums[r]})/({den})"
              for r in range(gen.n)],
        "numerators": [str(x) for x in nums],
        "denominator": str(den),
        "n_trees": result.n_trees,
        "certificate": cert.to_dict(),
        "latex": result.latex(labels=labels),
    }
    passed = cert.passed
    if ccert is not None:
        record["claim"] = {"file": str(args.claim), "p": [str(x) for x in claim], **ccert.to_dict(),
                           "differs_at": _differing_entries(claim, nums, den, labels) if not ccert.passed else []}
        passed = passed and ccert.passed
    if args.reversibility:

        db = detailed_balance(gen.Q, states=labels)
        kc = kolmogorov_criterion(gen.Q, states=labels)
        record["reversibility"] = {
            "reversible": db.reversible,
            "detailed_balance": {"holds": db.reversible, "checked": db.checked,
                                 "violations": list(db.violations)},
            "kolmogorov": {"holds": kc.reversible, "checked": kc.checked,
                           "violations": list(kc.violations)},
        }
    record["passed"] = passed
    record["verdict"] = "pass" if passed else "fail"

    if json_path is not None:
        write_json(json_path, record)
    if tex_path is not None:
        atomic_write_bytes(tex_path, (f"% p_st of {gen.path} (sp-ode symbolic)\n\\[\n{record['latex']}\n\\]\n").encode())
    if args.json:
        print(dumps(record))
    else:
        _print(record, result, labels, args)
    return EXIT_OK if passed else EXIT_FAILED


def _differing_entries(claim, nums, den, labels: list[str]) -> list[dict]:
    """The states where a false claim differs from the exact p_st just computed (claimed and exact values).

    Compared exactly: claim_r − num_r/den is brought over one denominator (`sympy.cancel`), so an entry
    is named only when it really differs, not when it is written another way.
    """
    import sympy

    out = []
    for r, (c, num) in enumerate(zip(claim, nums)):
        exact = num / den
        if sympy.cancel(sympy.together(c - exact)) != 0:
            out.append({"state": labels[r], "claimed": str(c),
                        "exact": str(sympy.factor(exact)) if len(str(den)) < 400 else f"({num})/({den})"})
    return out


def _with_labels(text: str, labels: list[str]) -> str:
    """State indices in a message, followed by their labels when the file named the states."""
    if labels == [str(k) for k in range(len(labels))]:
        return text
    return f"{text} (states 0..{len(labels) - 1} = {', '.join(labels)})"


def _print(record: dict, result, labels: list[str], args) -> None:
    cert = record["certificate"]
    print(f"p_st of {record['file']} (n = {record['n']}, {record['n_trees']} spanning in-trees, exact)")
    print(record["latex"] if args.latex else result.text(labels))
    held = sum(1 for i in cert["identities"] if i["held"])
    pos = ", p > 0" if cert["positive"] else ""
    print(f"certificate: Q^T p = 0 and 1^T p = 1 exactly{pos} ({held}/{len(cert['identities'])} identities): "
          f"{'PASS' if cert['passed'] else 'FAIL'}")
    if "claim" in record:
        claim = record["claim"]
        verdict = "TRUE (Q^T p = 0, 1^T p = 1 exactly)" if claim["passed"] else claim["verdict"]
        print(f"claim {claim['file']}: {verdict}")
        for item in claim.get("differs_at", []):
            print(f"  differs from p_st at state {item['state']}: claimed {item['claimed']}, exact {item['exact']}")
        for item in claim["leftover"]:
            print(f"  {item['identity']} = {item['leftover']}")
    if "reversibility" in record:
        rev = record["reversibility"]
        numbered = (f" (states numbered {', '.join(f'{k} = {x}' for k, x in enumerate(labels))})"
                    if labels != [str(k) for k in range(len(labels))] else "")
        # a property of the chain, reported; not a check (a non-reversible chain is not an error)
        print(f"reversible: {'yes' if rev['reversible'] else 'no'} (a property of the chain, not a check; "
              f"it does not enter the verdict){numbered}")
        for key, name in (("detailed_balance", "detailed balance"), ("kolmogorov", "Kolmogorov's cycle criterion")):
            part = rev[key]
            status = "holds" if part["holds"] else f"does not hold: {'; '.join(part['violations'][:3])}"
            print(f"  {name} {status} ({part['checked']} checked)")
    checked = "p_st exact" + (" and the claim" if "claim" in record else "")
    print(f"verdict ({checked}): {record['verdict'].upper()}")
