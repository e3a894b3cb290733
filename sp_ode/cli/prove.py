"""`sp-ode prove`: run every machine check of proofs/proof.md and print the claim table.

Each `proofs/check_*.py` defines a `ClaimSet` named `claims` (`sp_ode.cli.claims`);
this command loads them all (from the `proofs/` folder beside the package, i.e.
a source checkout), runs every claim (`--smoke`: the small sizes the test suite
uses), prints a table — claim, method, result, seconds — and exits 1 when any
claim fails.  `--json` prints one object `{"passed", "smoke", "seconds",
"claims": [{"id", "passed", "seconds", "statement", "method", "detail", "script"}]}`;
`--out DIR` also writes it to `DIR/report.json`.
"""
from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

from sp_ode.cli.claims import ClaimResult, format_table
from sp_ode.cli.common import BUILTIN_HELP, UsageError
from sp_ode.core.files import dumps, write_json
from sp_ode.core.reporting import progress

PROOFS = Path(__file__).resolve().parents[2] / "proofs"
# The order of proof.md; any other check_*.py follows alphabetically.
ORDER = ("check_tree_theorem", "check_uniqueness", "check_group_inverse", "check_slow_manifold",
         "check_rates", "check_certificate")


HELP = BUILTIN_HELP["prove"]


def add_arguments(parser) -> None:
    parser.add_argument("--smoke", action="store_true", help="small sizes (the test-suite run, well under a minute)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", default=None, help="also write report.json into this folder")
    parser.add_argument("--only", default=None, metavar="TEXT", help="run only claims whose id contains TEXT")
    parser.add_argument("--proofs", default=str(PROOFS), help="folder holding check_*.py (default: proofs/ of this checkout)")


def load_claim_sets(folder: Path) -> list:
    """Import every `check_*.py` in `folder` (sorted) and return their `claims` objects."""

    rank = {name: k for k, name in enumerate(ORDER)}
    scripts = sorted(folder.glob("check_*.py"), key=lambda p: (rank.get(p.stem, len(ORDER)), p.stem))
    if not scripts:
        raise UsageError(f"`--proofs` {str(folder)!r} holds no check_*.py scripts (run from a source checkout).")
    sets = []
    for path in scripts:
        name = f"_sp_ode_proofs_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        if not hasattr(module, "claims"):
            raise UsageError(f"{path} defines no `claims` (a sp_ode.cli.claims.ClaimSet).")
        sets.append(module.claims)
    return sets


def run(args) -> int:

    start = time.perf_counter()
    sets = load_claim_sets(Path(args.proofs))
    chosen = [(s, cid) for s in sets for cid in s.ids if args.only is None or args.only in cid]
    if not chosen:

        raise UsageError(f"`--only` {args.only!r} matches no claim id.")
    results: list[tuple[str, ClaimResult]] = []
    bar = progress(total=len(chosen), desc="prove")
    for claim_set in sets:
        keep = [cid for s, cid in chosen if s is claim_set]
        if not keep:
            continue
        for result in claim_set.run(smoke=args.smoke, only=keep, progress=lambda cid: bar.set_postfix_str(cid)):
            results.append((claim_set.script, result))
            bar.update(1)
            if not result.passed:
                print(f"FAILED {result.id}: {result.detail}", file=sys.stderr)
    bar.close()
    passed = all(r.passed for _, r in results)
    record = {
        "passed": passed,
        "smoke": bool(args.smoke),
        "seconds": time.perf_counter() - start,
        "claims": [{**r.to_dict(), "script": script} for script, r in results],
    }
    if args.out:
        write_json(Path(args.out) / "report.json", record)
    if args.json:
        print(dumps(record))
    else:
        print(format_table([r for _, r in results]))
        print(f"\n{sum(r.passed for _, r in results)}/{len(results)} claims passed"
              f"{' (--smoke sizes)' if args.smoke else ''} in {record['seconds']:.1f} s; passed: {passed}")
    return 0 if passed else 1
