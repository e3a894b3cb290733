"""Figures of the surrogate benchmark (issue 27) from its JSON records and checkpoints.

    .venv/bin/python -m bench.phi.plot_surrogate --dir results/phi/surrogate

Writes into --dir: ``learning_curve.png``, ``certificate_vs_error.png``, ``error_slices.png`` (exact
solves along y₁ with the other inputs at the box centre; numbers in ``slices.json``),
``baseline.png`` and ``reduced.png`` — each only when its record exists.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench._common import RESULTS
from bench.phi._models import CHECK_FIELDS, family
from neural.phi.figures import plot_learning_curve
from neural.phi.result import PhiFit
from sp_ode.core.files import write_json
from sp_ode.core.reporting import figures


def _latest(folder: Path, stem: str) -> Path | None:
    found = sorted((p for p in folder.glob(f"{stem}*.json") if not p.stem.endswith("partial")),
                   key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=str(RESULTS / "phi" / "surrogate"))
    parser.add_argument("--slice-points", type=int, default=41)
    args = parser.parse_args(argv)
    folder = Path(args.dir)
    plt = figures()
    targets = {d: _latest(folder, f"target_d{d}_n10000_factored_kl1") for d in (3, 8)}
    targets = {d: json.loads(p.read_text()) for d, p in targets.items() if p is not None}

    for d, rec in targets.items():
        plot_learning_curve(rec["history"], folder / f"learning_curve_d{d}.png", plt,
                            title=f"two-gene CME, n = {rec['n']}, d = {d}: training (factored head, KL on anchors)")

    if targets:
        fig, axes = plt.subplots(1, len(targets), figsize=(5.4 * len(targets), 5), squeeze=False)
        for ax, (d, rec) in zip(axes[0], targets.items()):
            err = np.asarray(rec["check"]["error_l1"])
            cert = np.asarray(rec["check"]["certificate"], dtype=float)
            cmax = np.asarray(rec["check"]["certificate_max"], dtype=float)
            ok = np.isfinite(cert)
            ax.loglog(err[ok], cert[ok], ".", ms=4, label=r"certificate $2\sum_j h_j|r_j|$")
            ax.loglog(err[ok], cmax[ok], "x", ms=3, alpha=0.5, label=r"$2\max E[\tau]\,\|r\|_1$")
            lo, hi = err.min() / 2, max(cmax[ok].max() if ok.any() else err.max(), err.max()) * 2
            ax.loglog([lo, hi], [lo, hi], "k-", lw=0.8, label="= true error")
            ax.axhline(1e-3, color="C3", ls=":", label="target 1e-3")
            ax.set_xlabel(r"true $\|\varphi_\theta(y) - p_{st}(y)\|_1$ (exact sparse solve)")
            ax.set_ylabel("certificate")
            ax.set_title(f"d = {d}: {ok.sum()} of {len(err)} held-out points certified by an anchor", fontsize=9)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(folder / "certificate_vs_error.png", dpi=140)

        # error against y along y₁ (others at the centre), exact solves at each point
        slices = {}
        fig, axes = plt.subplots(1, len(targets), figsize=(6 * len(targets), 4.2), squeeze=False)
        for ax, (d, rec) in zip(axes[0], targets.items()):
            ckpt = folder / f"ckpt_{rec['tag']}.pt"
            if not ckpt.exists():
                continue
            fit = PhiFit.load(ckpt, family(d, rec["N"]))
            ys = np.ones((args.slice_points, d))
            ys[:, 0] = np.linspace(fit.system.lower[0], fit.system.upper[0], args.slice_points)
            chk = fit.evaluate(ys)
            slices[f"d{d}"] = {k: getattr(chk, k).tolist() for k in CHECK_FIELDS}
            cert = np.where(np.isfinite(chk.certificate), chk.certificate, np.nan)
            cmax = np.where(np.isfinite(chk.certificate_max), chk.certificate_max, np.nan)
            ax.semilogy(ys[:, 0], chk.error_l1, "o-", ms=3, label=r"true $\|\varphi_\theta - p_{st}\|_1$")
            ax.semilogy(ys[:, 0], cert, "k-", label=r"certificate $2\sum_j h_j|(Q^T\varphi_\theta)_j|$")
            ax.semilogy(ys[:, 0], cmax, "k:", label=r"$2\max E[\tau]\,\|Q^T\varphi_\theta\|_1$")
            ax.axhline(1e-3, color="C3", ls=":", lw=0.8, label="target 1e-3")
            ax.set_xlabel("$y_1$ (A production factor; the other inputs at 1)")
            ax.set_ylabel("ℓ1 error")
            ax.set_title(f"d = {d}, n = {rec['n']}: error and certificate along $y_1$", fontsize=9)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(folder / "error_slices.png", dpi=140)
        write_json(folder / "slices.json", slices)

    base = _latest(folder, "baseline")
    if base is not None:
        rows = json.loads(base.read_text())["rows"]
        ds = [r["d"] for r in rows]
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
        ax = axes[0]
        ax.semilogy(ds, [r["network"]["max_error_l1"] for r in rows], "o-", label="network (60 s training, 16 anchor solves)")
        for kind, mk in (("tensor_chebyshev", "s"), ("smolyak", "^")):
            best = [min((x["max_error_l1"] for x in r[kind]["ladder"] if "max_error_l1" in x), default=np.nan)
                    for r in rows]
            ax.semilogy(ds, best, mk + "--", label=f"{kind.replace('_', ' ')}: level that matched (or last within the cap)")
        ax.set_xlabel("d (slow inputs)")
        ax.set_ylabel("held-out max ℓ1 error")
        ax.legend(fontsize=8)
        ax.set_title("accuracy", fontsize=10)
        ax = axes[1]
        net_solves = [16 for _ in rows]
        ax.semilogy(ds, net_solves, "o-", label="network: exact solves used (anchors)")
        for kind, mk in (("tensor_chebyshev", "s"), ("smolyak", "^")):
            need = [r[kind]["solves_to_match_network"] for r in rows]
            ax.semilogy(ds, [np.nan if v is None else v for v in need], mk + "--",
                        label=f"{kind.replace('_', ' ')}: solves to match the network")
            capped = [r["d"] for r, v in zip(rows, need) if v is None]
            if capped:
                ax.semilogy(capped, [3000] * len(capped), mk, mfc="none", color="0.5",
                            label=f"{kind.replace('_', ' ')}: not matched within 3000 solves")
        ax.set_xlabel("d (slow inputs)")
        ax.set_ylabel("exact sparse solves")
        ax.legend(fontsize=7)
        ax.set_title(f"cost at equal accuracy (n = {rows[0]['n']})", fontsize=10)
        fig.tight_layout()
        fig.savefig(folder / "baseline.png", dpi=140)

    red = _latest(folder, "reduced")
    if red is not None:
        r = json.loads(red.read_text())
        t = np.asarray(r["t"])
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
        ys, ye = np.asarray(r["y_surrogate"]), np.asarray(r["y_exact"])
        for j, name in enumerate(("$y_1$", "$y_3$", "$y_4$")):
            axes[0].plot(t, ye[:, j], "-", color=f"C{j}", label=f"{name} exact p_st (sparse solves)")
            axes[0].plot(t, ys[:, j], "--", color=f"C{j}", label=f"{name} on φ_θ")
        axes[0].set_xlabel("t")
        axes[0].legend(fontsize=7, ncol=2)
        axes[0].set_title("reduced flow y' = G(F φ(y), y), d = 3", fontsize=10)
        axes[1].semilogy(t[1:], np.asarray(r["difference"])[1:], "o-", ms=3, label=r"$|y_\theta(t) - y(t)|_2$")
        axes[1].semilogy(t[1:], np.asarray(r["propagated_bound"])[1:], "k-", label="certified error propagated")
        axes[1].set_xlabel("t")
        axes[1].legend(fontsize=8)
        axes[1].set_title("the difference against the propagated certificate", fontsize=10)
        fig.tight_layout()
        fig.savefig(folder / "reduced.png", dpi=140)
    print("figures in", folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
