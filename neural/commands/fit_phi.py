"""`sp-ode fit-phi`: fit φ_θ(y) to p_st(y), certify its error (docs/theory.md §3.4 (T4)), plot it.

Trains [`neural.PhiMLP`][neural.phi.PhiMLP] with the `kl` or `residual` loss on a family
Q(y), evaluates on a held-out grid inside the domain and on points outside it
(flagged as extrapolation), prints a table (or one JSON object with `--json`),
and writes `report.json`, figures (`--format png|pdf|svg`, `--dpi`) and the fitted
network (`phi/`: safetensors weights + config; `neural.load_phi`) under `--out`; a folder that already
holds a fit (`report.json` or `phi/`) is refused before any work unless `--overwrite`.  Exit 1 when
training stopped on a non-finite loss or the certificate failed to bound the error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from sp_ode.cli.common import UsageError, default_out, refuse_existing

HELP = "fit an MLP phi_theta(y) to p_st(y) and certify its error"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--system", default="cycle3",
                        help="a family of sp_ode.FAMILIES (cycle3 default; cycle3_2d: d = 2; ring10: 10 states), "
                             "path/to/file.py:FUNCTION returning Q(y) for y of shape (d,) (needs --domain), or "
                             "path/to/file.py:OBJECT naming an sp_ode.MasterEquationSystem (its Q_of_y; --domain "
                             "unless it is built over a GeneratorFamily)")
    parser.add_argument("--domain", type=float, nargs="+", default=None, metavar="LO HI",
                        help="training box, one LO HI pair per slow variable (d = number of pairs)")
    parser.add_argument("--loss", default="kl", help="kl (supervised by p_st) | residual (never sees p_st)")
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
                        help="output folder: report.json, figures and the fitted φ_θ in phi/ (default out/fit-phi)")
    parser.add_argument("--overwrite", action="store_true", help="replace the fit already in --out")
    parser.add_argument("--format", default="png", help="figure format: png (default) | pdf | svg")
    parser.add_argument("--dpi", type=int, default=150, help="figure resolution in dots per inch (default 150)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--smoke", action="store_true", help="a tiny, seconds-long run")


def _row(label: str, held: dict, extra: dict, key: str, fmt: str = "{:.3e}") -> str:
    def cell(s):
        if key not in s:
            return "-"
        v = s[key]
        return ("yes" if v else "NO") if isinstance(v, bool) else fmt.format(v)
    return f"  {label:<30}{cell(held):>16}  {cell(extra):>18}"


def run(args) -> int:
    from neural._phi_report import FORMATS, write_figures
    from neural._phi_system import evaluation_points, resolve_system, sample
    from neural.phi import LOSSES, OPTIMIZERS, evaluate_sample, fit_phi
    from neural.phi_io import save_phi
    from sp_ode.core.files import dumps, write_json
    from sp_ode.core.precision import UNIT_ROUNDOFF
    from sp_ode.core.validation import check_choice
    from sp_ode.markov.bounds import input_rounding_bound
    from sp_ode.markov.generator import input_unit_roundoff

    if args.device != "cpu":
        raise UsageError(f"`--device` must be 'cpu' (φ_θ is a small float64 fit); got {args.device!r}.")
    check_choice("--loss", args.loss, LOSSES)
    check_choice("--optimizer", args.optimizer, OPTIMIZERS)
    check_choice("--format", args.format, FORMATS)
    if args.dpi <= 0:
        raise UsageError(f"`--dpi` must be a positive integer; got {args.dpi}.")
    out = Path(args.out if args.out is not None else default_out("fit-phi"))
    if out.exists() and not out.is_dir():
        raise UsageError(f"`--out` {str(out)!r} is a file; give a folder.")
    if not args.overwrite:  # checked before the fit: a second run never replaces the first one silently
        refuse_existing([out / "report.json", out / "phi"], what=f"a φ_θ fit in `--out` {str(out)!r}")
    if args.domain is not None and len(args.domain) % 2:
        raise UsageError(f"`--domain` takes LO HI pairs (an even count); got {len(args.domain)} numbers.")
    system = resolve_system(args.system, args.domain)
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
    # rates moves p_st by at most this much more, relative to the rates meant (docs/theory.md §7.8).
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


def _empty_like(ev):
    """An evaluation with no points (no extrapolation shell), for the figures."""
    from dataclasses import replace

    return replace(ev, y=ev.y[:0], phi=ev.phi[:0], p_st=ev.p_st[:0], abs_error=ev.abs_error[:0],
                   error_2=ev.error_2[:0], tv=ev.tv[:0], kl=ev.kl[:0], residual=ev.residual[:0],
                   certificate=ev.certificate[:0], sharp_certificate=ev.sharp_certificate[:0],
                   slack=ev.slack[:0], holds=ev.holds[:0], extrapolation=True)
