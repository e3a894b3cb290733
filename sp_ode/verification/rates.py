"""Fitted convergence rates: d ≈ C ε^p on the points in the asymptotic range, with statistics (docs/theory.md §3.5).

`fit_rate` fits log d on log ε by least squares over the points kept, with the standard
error s_b = √(SSR/(N − 2) / Σ(log ε − mean)²) and the 95 % interval b ± t_{0.975, N−2} s_b.
Points are left out, each with its reason: no measurement (the solve failed); at or
below the solver's error floor; before the asymptotic regime (at the large-ε end, while
the local slope differs by more than `SETTLE` from the median of the later ones); near
the floor and bending (at the small-ε end).  No rule looks at the expected slope, so a
wrong manifold cannot be fitted into passing.  A rate passes when N ≥ `MIN_POINTS`, the
interval meets [expected − tol, expected + tol] and is no wider than that band.
Used by `sp_ode.convergence_certificate` and the network verdict.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import stats

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float, Int

__all__ = ["fit_rate", "RateFit", "MIN_POINTS", "SETTLE", "CONFIDENCE"]

MIN_POINTS = 4          # a fit through fewer points never passes
SETTLE = 0.1            # local slopes within this of the later ones: in the asymptotic regime
CONFIDENCE = 0.95


@dataclass(frozen=True)
class RateFit:
    """One fitted rate (module docstring): slope, its standard error and 95 % interval, and the verdict.

    Attributes
    ----------
    slope, stderr : float (NaN with fewer than 3 points)
    interval
        (lo, hi).
    expected, tol : float
        Points in the fit.
    n_points : int
        Points in the fit.
    used : ndarray (K,) bool
        Which points were fitted.
    dropped : list of dict
        `{"P", "eps", "distance", "reason"}` for each point left out.
    passed : bool
        Why it failed ("" when it passed).
    reason : str
        Why it failed ("" when it passed).
    """

    slope: float
    stderr: float
    interval: tuple
    expected: float
    tol: float
    n_points: int
    used: np.ndarray
    dropped: list
    passed: bool
    reason: str

    def to_dict(self) -> dict:
        return {"slope": self.slope, "stderr": self.stderr, "interval": list(self.interval),
                "expected": self.expected, "tolerance": self.tol, "n_points": self.n_points,
                "used": self.used, "dropped": self.dropped, "passed": self.passed, "reason": self.reason}


def _local_slopes(le: np.ndarray, ld: np.ndarray) -> np.ndarray:
    return np.diff(ld) / np.diff(le)


def fit_rate(eps: Float[ArrayLike, " K"], d: Float[ArrayLike, " K"], floor: float, *, expected: float,
             tol: float = 0.15, Ps: Int[ArrayLike, " K"] | None = None,
             min_points: int = MIN_POINTS) -> RateFit:
    """Fit d ≈ C ε^p on the points in the asymptotic range, with statistics (module docstring).

    Parameters
    ----------
    eps : ndarray (K,) decreasing (P increasing)
        Distances (NaN: solve failed).
    d : ndarray (K,)
        Distances (NaN: solve failed).
    floor : float
        The solver's error floor.
    expected, tol : float
        The theory's slope and the admitted deviation.
    Ps : ndarray (K,), optional
        For the messages (default 1/ε).

    Returns
    -------
    RateFit
    """
    eps, d = np.asarray(eps, dtype=np.float64), np.asarray(d, dtype=np.float64)
    Ps = np.rint(1.0 / eps).astype(int) if Ps is None else np.asarray(Ps)
    dropped = []

    def drop(i, reason):
        dropped.append({"P": int(Ps[i]), "eps": float(eps[i]), "distance": float(d[i]), "reason": reason})

    keep = []
    for i in range(len(d)):
        if not np.isfinite(d[i]):
            drop(i, "no measurement (the solve failed)")
        elif d[i] <= floor:
            drop(i, f"at or below the solver's error floor {floor:.1e}")
        else:
            keep.append(i)
    le, ld = np.log(eps), np.log(np.where(d > 0, d, np.nan))
    # before the asymptotic regime: from the large-ε end while the first local slope has not settled
    while len(keep) >= 3:
        s = _local_slopes(le[keep], ld[keep])
        later = float(np.median(s[1:]))
        if abs(s[0] - later) <= SETTLE:
            break
        drop(keep[0], f"before the asymptotic regime: local slope {s[0]:.2f}, later ones {later:.2f}")
        keep = keep[1:]
    # bending into the floor at the small-ε end
    while len(keep) >= 3 and d[keep[-1]] <= 10 * floor:
        s = _local_slopes(le[keep], ld[keep])
        earlier = float(np.median(s[:-1]))
        if abs(s[-1] - earlier) <= SETTLE:
            break
        drop(keep[-1], f"within 10x of the solver's error floor and bending: local slope {s[-1]:.2f}, "
                       f"earlier ones {earlier:.2f}")
        keep = keep[:-1]
    used = np.zeros(len(d), dtype=bool)
    used[keep] = True
    N = len(keep)
    slope = stderr = float("nan")
    interval = (float("nan"), float("nan"))
    if N >= 2:
        x, y = le[keep], ld[keep]
        fit = stats.linregress(x, y)
        slope = float(fit.slope)
        if N >= 3:
            stderr = float(fit.stderr)
            half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, N - 2)) * stderr
            interval = (slope - half, slope + half)
    dropped.sort(key=lambda r: r["P"])
    lo, hi = expected - tol, expected + tol
    if N < min_points:
        reason = (f"only {N} point(s) in the asymptotic range (at least {min_points} needed)"
                  + (f"; slope {slope:.3f}" if np.isfinite(slope) else ""))
    elif not (interval[1] >= lo and interval[0] <= hi):
        reason = (f"slope {slope:.3f} ± {stderr:.3f} (95 % interval [{interval[0]:.3f}, {interval[1]:.3f}]) "
                  f"does not meet {expected:g} ± {tol:g}")
    elif interval[1] - interval[0] > 2 * tol:
        reason = (f"inconclusive: 95 % interval [{interval[0]:.3f}, {interval[1]:.3f}] is wider than the "
                  f"tolerance band {expected:g} ± {tol:g}")
    else:
        reason = ""
    return RateFit(slope, stderr, interval, float(expected), float(tol), N, used, dropped, not reason, reason)


