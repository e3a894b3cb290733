"""`sp-ode fit-phi`: fit φ_θ(y) to p_st(y), certify its error (docs/theory.md §3.4 (T4)), plot it.

Trains [`neural.PhiMLP`][neural.phi.model.PhiMLP] with the `kl` or `residual` loss on a family
Q(y), evaluates on a held-out grid inside the domain and on points outside it
(flagged as extrapolation), prints a table (or one JSON object with `--json`),
and writes `report.json`, figures (`--format png|pdf|svg`, `--dpi`) and the fitted
network (`phi/`: safetensors weights + config; `neural.load_phi`) under `--out`; a folder that already
holds a fit (`report.json` or `phi/`) is refused before any work unless `--overwrite` (or `--resume`,
which continues a sparse fit there).  Without `--out` each run gets a fresh folder
`out/fit-phi/DATE/TIME` (`out/fit-phi/latest` links the newest).  Exit 1 when
training stopped on a non-finite loss or the certificate failed to bound the error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from sp_ode.cli.common import UsageError, refuse_existing, run_folder

HELP = "fit an MLP phi_theta(y) to p_st(y) and certify its error"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--system", default="cycle3",
                        help="a family of sp_ode.FAMILIES (cycle3 default; cycle3_2d: d = 2; ring10: 10 states), "
                             "a network model (network:NAME or NAME: telegraph, birth_death, cascade, …; its box "
                             "defaults to [y0/2, 3·y0/2]), path/to/file.py:OBJECT naming a NetworkSystem, "
                             "path/to/file.py:FUNCTION returning Q(y) for y of shape (d,) (needs --domain), or "
                             "path/to/file.py:OBJECT naming an sp_ode.MasterEquationSystem (its Q_of_y; --domain "
                             "unless it is built over a GeneratorFamily)")
    parser.add_argument("--domain", type=float, nargs="+", default=None, metavar="LO HI",
                        help="training box, one LO HI pair per slow variable (d = number of pairs)")
    parser.add_argument("--loss", default=None,
                        help="kl (supervised by p_st; default for small families) | residual (never sees p_st; the "
                             "only loss, and the default, for a sparse family such as a network)")
    parser.add_argument("--width", type=int, default=32, help="hidden width (default 32)")
    parser.add_argument("--depth", type=int, default=2, help="hidden layers (default 2)")
    parser.add_argument("--activation", default="tanh", help="tanh | silu | gelu")
    parser.add_argument("--steps", type=int, default=None, help="optimiser steps (default 500; 30 with --smoke)")
    parser.add_argument("--optimizer", default="lbfgs", help="lbfgs (default) | adam")
    parser.add_argument("--lr", type=float, default=None, help="learning rate (default 1 for lbfgs, 1e-2 for adam)")
    parser.add_argument("--n-train", type=int, default=None, help="training points (default 256·d)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads while training (default 1)")
    parser.add_argument("--device", default="cpu", help="cpu only: the fit is a small float64 problem")
    parser.add_argument("--out", default=None,
                        help="output folder: report.json, figures and the fitted φ_θ in phi/ (default: a fresh out/fit-phi/DATE/TIME, linked as out/fit-phi/latest; "
                             "--resume without --out continues the latest)")
    parser.add_argument("--overwrite", action="store_true", help="replace the fit already in --out")
    parser.add_argument("--format", default="png", help="figure format: png (default) | pdf | svg")
    parser.add_argument("--dpi", type=int, default=150, help="figure resolution in dots per inch (default 150)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--smoke", action="store_true", help="a tiny, seconds-long run")
    sparse = parser.add_argument_group("sparse families (a network, or Q(y) returning scipy.sparse)")
    sparse.add_argument("--head", default="dense", help="dense (default) | factored (product-form over species)")
    sparse.add_argument("--rank", type=int, default=2, help="interaction rank of the factored head (default 2)")
    sparse.add_argument("--n-anchors", type=int, default=16, help="exact solves kept to certify (default 16)")
    sparse.add_argument("--kl-weight", type=float, default=0.0,
                        help="weight of an optional KL term on the anchors' exact solves (default 0: Q(y) only)")
    sparse.add_argument("--tol", type=float, default=1e-3,
                        help="certified ℓ1 tolerance; a held-out point above it falls back to the exact solve")
    sparse.add_argument("--n-certify", type=int, default=None, help="held-out Sobol points certified (default 256)")
    sparse.add_argument("--time-budget", type=float, default=None, help="stop training after this many seconds")
    sparse.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")


def _row(label: str, held: dict, extra: dict, key: str, fmt: str = "{:.3e}") -> str:
    def cell(s):
        if key not in s:
            return "-"
        v = s[key]
        return ("yes" if v else "NO") if isinstance(v, bool) else fmt.format(v)
    return f"  {label:<30}{cell(held):>16}  {cell(extra):>18}"


def run(args) -> int:
    from neural.phi.families import evaluation_points, resolve_system, sample
    from neural.phi.figures import FORMATS, write_figures
    from neural.phi.files import save_phi
    from neural.phi.fit import LOSSES, OPTIMIZERS, fit_phi
    from neural.phi.result import evaluate_sample
    from neural.phi.sparse import SparseFamily
    from sp_ode.core.files import dumps, write_json
    from sp_ode.core.precision import UNIT_ROUNDOFF
    from sp_ode.core.validation import check_choice
    from sp_ode.markov.bounds import input_rounding_bound
    from sp_ode.markov.generator import input_unit_roundoff

    if args.device != "cpu":
        raise UsageError(f"`--device` must be 'cpu' (φ_θ is a small float64 fit); got {args.device!r}.")
    check_choice("--optimizer", args.optimizer, OPTIMIZERS)
    check_choice("--format", args.format, FORMATS)
    if args.dpi <= 0:
        raise UsageError(f"`--dpi` must be a positive integer; got {args.dpi}.")
    out = Path(args.out) if args.out is not None else run_folder("fit-phi", resume=args.resume)
    if out.exists() and not out.is_dir():
        raise UsageError(f"`--out` {str(out)!r} is a file; give a folder.")
    if not (args.overwrite or args.resume):  # before the fit: a second run never replaces the first one silently
        refuse_existing([out / "report.json", out / "phi"], what=f"a φ_θ fit in `--out` {str(out)!r}")
    if args.domain is not None and len(args.domain) % 2:
        raise UsageError(f"`--domain` takes LO HI pairs (an even count); got {len(args.domain)} numbers.")
    system = resolve_system(args.system, args.domain)
    if isinstance(system, SparseFamily):
        return _run_sparse(args, system, out)
    args.loss = "kl" if args.loss is None else args.loss
    check_choice("--loss", args.loss, LOSSES)
    steps = args.steps if args.steps is not None else (30 if args.smoke else 500)
    n_train = args.n_train if args.n_train is not None else (48 * system.d if args.smoke else None)
    n_eval = (101 if system.d == 1 else 21 ** system.d) if args.smoke else None
    print(f"fit-phi: {system.name} (n = {system.n}, d = {system.d}), loss {args.loss}, {steps} {args.optimizer} "
          "steps", file=sys.stderr)

    fit = fit_phi(system, loss=args.loss, width=args.width, depth=args.depth, activation=args.activation,
                  steps=steps, optimizer=args.optimizer, lr=args.lr, n_train=n_train, seed=args.seed,
                  n_monitor=(41 if system.d == 1 else 81) if args.smoke else None, show_progress=True,
                  threads=args.threads)
    inside, outside = evaluation_points(system, n_eval)
    held = evaluate_sample(fit.model, sample(system, inside))
    shell = sample(system, outside, skip_invalid=True)
    # Outside D, A1–A2 are not assumed: points where Q(y) is invalid are skipped and listed.
    extra = evaluate_sample(fit.model, shell, extrapolation=True) if len(shell) else _empty_like(held)
    hs, es = held.summary(), extra.summary()
    if shell.skipped is not None and len(shell.skipped):
        es["skipped"] = int(len(shell.skipped))
        es["skipped_y"] = shell.skipped[:20].tolist()
        print(f"fit-phi: {len(shell.skipped)} extrapolation points skipped: Q(y) is not an irreducible generator "
              "there", file=sys.stderr)
    holds = bool(hs["certificate_holds"] and es.get("certificate_holds", True))
    # A float32 Q(y) (a jnp function run outside JAX's float64 mode) is accepted; the rounding of its
    # rates moves p_st by at most this much more, relative to the rates meant (docs/theory.md §7.12).
    u_in = input_unit_roundoff(system.Q((system.lower + system.upper) / 2))
    rounding = input_rounding_bound(system.n, u_in) if u_in > UNIT_ROUNDOFF else 0.0
    if rounding:
        print(f"fit-phi: Q(y) has reduced-precision rates (unit roundoff {u_in:.3g}, e.g. float32): p_st may move by "
              f"up to {rounding:.3g} more; added to the certificate's bound in the report", file=sys.stderr)

    figures = write_figures(fit, held, extra, out, fmt=args.format, dpi=args.dpi)
    phi_dir = save_phi(fit.model, out / "phi", metadata={
        "system": system.name, "loss": fit.loss, "max_abs_error": hs["max_abs_error"],
        "max_certificate": hs["max_certificate"], "load": "neural.load_phi(path); .jax_fn() for phi= of "
                                                          "sp_ode.simulate_reduced"})
    record = {
        "system": system.name, "n": system.n, "d": system.d,
        "domain": np.stack([system.lower, system.upper], 1).tolist(),
        "loss_name": fit.loss, "loss": fit.final_loss, "status": fit.status, "message": fit.message,
        "max_abs_error": hs["max_abs_error"], "max_tv": hs["max_tv"], "max_kl": hs["max_kl"],
        "max_certificate": hs["max_certificate"], "max_sharp_certificate": hs["max_sharp_certificate"],
        "certificate_holds": holds, "certificate_norm": "2-norm: ‖φ_θ − p_st‖₂ ≤ ‖A^#‖₂‖Qᵀφ_θ‖₂",
        "input_rounding": rounding, "max_certificate_with_input_rounding": hs["max_certificate"] + rounding,
        "train_seconds": fit.train_seconds, "setup_seconds": fit.setup_seconds,
        "held_out": hs, "extrapolation": es, "config": fit.config,
        "history": fit.history, "figures": [str(p) for p in figures], "phi": str(phi_dir),
    }
    write_json(out / "report.json", record)
    if args.json:
        print(dumps(record))
    else:
        print(f"φ_θ fit of {system.name} (n = {system.n}, d = {system.d}), loss {fit.loss} = {fit.final_loss:.3e}, "
              f"{steps} {args.optimizer} steps in {fit.train_seconds:.1f} s ({fit.status})")
        print(f"  {'':<30}{'held-out (' + str(hs['n_points']) + ')':>16}  "
              f"{'extrapolation (' + str(es['n_points']) + ')':>18}")
        for label, key in [("max |φ_θ − p_st|", "max_abs_error"), ("max ‖φ_θ − p_st‖₂", "max_error_2"),
                           ("max total variation", "max_tv"), ("max KL(p_st ‖ φ_θ)", "max_kl"),
                           ("max certificate ‖A^#‖‖Qᵀφ‖", "max_certificate"),
                           ("max sharp certificate", "max_sharp_certificate"),
                           ("certificate holds", "certificate_holds")]:
            print(_row(label, hs, es, key))
        print(f"  report: {out / 'report.json'}; figures: {', '.join(p.name for p in figures)}; "
              f"φ_θ: {phi_dir}/ (neural.load_phi)")
    if fit.status != "ok":
        print(f"fit-phi: training failed: {fit.message}", file=sys.stderr)
        return 1
    if not holds:
        print("fit-phi: the certificate did not bound the error at every point", file=sys.stderr)
        return 1
    return 0


def _run_sparse(args, family, out: Path) -> int:
    """A sparse family: fit_surrogate, an exact check on a few held-out points, certified_predict on more."""
    from neural.phi.figures import plot_certificate_vs_error, plot_learning_curve
    from neural.phi.files import save_phi
    from neural.phi.sparse import design_points
    from neural.phi.surrogate import fit_surrogate
    from sp_ode.core.files import dumps, write_json
    from sp_ode.core.reporting import figures

    if args.loss not in (None, "residual"):
        raise UsageError(f"`--loss` must be 'residual' for the sparse family {family.name!r} (n = {family.n}); "
                         f"got {args.loss!r} (add --kl-weight for a KL term on the anchors' exact solves).")
    if args.tol <= 0:
        raise UsageError(f"`--tol` must be > 0; got {args.tol}.")
    out.mkdir(parents=True, exist_ok=True)
    smoke = args.smoke
    steps = args.steps if args.steps is not None else (15 if smoke else 300)
    print(f"fit-phi: {family.name} (sparse, n = {family.n}, d = {family.d}), residual loss, {steps} "
          f"{args.optimizer} steps, head {args.head}", file=sys.stderr)
    fit = fit_surrogate(family, width=args.width, depth=args.depth, activation=args.activation, head=args.head,
                        rank=args.rank, n_train=args.n_train or (32 if smoke else 512), steps=steps,
                        optimizer=args.optimizer, lr=args.lr, n_anchors=2 if smoke else args.n_anchors,
                        kl_weight=args.kl_weight, n_monitor=2 if smoke else 16, seed=args.seed,
                        checkpoint=out / "checkpoint.pt", resume=args.resume, time_budget=args.time_budget,
                        show_progress=True, threads=args.threads)
    held = design_points(family.lower, family.upper, 4 if smoke else 64, kind="lhs", seed=args.seed + 99)
    chk = fit.evaluate(held)   # exact sparse solves: the true ℓ1 errors and the anchored certificate
    ys = design_points(family.lower, family.upper, args.n_certify or (8 if smoke else 256), seed=args.seed + 12345)
    pred = fit.certified_predict(ys, args.tol, show_progress=True)
    plt = figures()
    paths = [plot_learning_curve(fit.history, out / f"training.{args.format}", plt, dpi=args.dpi,
                                 title=f"{family.name}: training (n = {family.n}, d = {family.d})"),
             plot_certificate_vs_error(chk.error_l1, chk.certificate, out / f"certificate.{args.format}", plt,
                                       dpi=args.dpi, tol=args.tol, title=f"{family.name}: certificate vs error")]
    ps = pred.summary()
    holds = bool(chk.holds.all())
    phi_dir = save_phi(fit.model, out / "phi", metadata={"system": family.name, "loss": "residual",
                                                         "max_error_l1": float(chk.error_l1.max())})
    record = {"system": family.name, "n": family.n, "d": family.d, "sparse": True,
              "domain": np.stack([family.lower, family.upper], 1).tolist(), "status": fit.status,
              "message": fit.message, "loss": fit.final_loss, "train_seconds": fit.train_seconds,
              "setup_seconds": fit.setup_seconds, "config": fit.config, "history": fit.history,
              "held_out": {"points": len(held), "max_error_l1": float(chk.error_l1.max()),
                           "max_certificate": float(chk.certificate.max()), "certificate_holds": holds,
                           "mean_exact_solve_seconds": float(chk.solve_seconds.mean())},
              "certified": ps, "figures": [str(p) for p in paths], "phi": str(phi_dir)}
    write_json(out / "report.json", record)
    if args.json:
        print(dumps(record))
    else:
        print(f"φ_θ surrogate of {family.name} (n = {family.n}, d = {family.d}): {fit.config['steps_done']} steps in "
              f"{fit.train_seconds:.1f} s ({fit.status})")
        print(f"  held-out ({len(held)} exact solves): max ‖φ_θ − p_st‖₁ = {chk.error_l1.max():.3e}, max certificate "
              f"{chk.certificate.max():.3e}, certificate holds: {'yes' if holds else 'NO'}")
        print(f"  certified_predict on {ps['n_points']} points (tol {args.tol:g}): max certificate "
              f"{ps['max_surrogate_certificate']:.3e}, {ps['fell_back']} fell back to the exact solve")
        print(f"  report: {out / 'report.json'}; figures: {', '.join(p.name for p in paths)}; φ_θ: {phi_dir}/")
    if fit.status != "ok":
        print(f"fit-phi: training failed: {fit.message}", file=sys.stderr)
        return 1
    if not holds:
        print("fit-phi: the certificate did not bound the error at every held-out point", file=sys.stderr)
        return 1
    return 0


def _empty_like(ev):
    """An evaluation with no points (no extrapolation shell), for the figures."""
    from dataclasses import replace

    return replace(ev.subset(slice(0, 0)), extrapolation=True)
