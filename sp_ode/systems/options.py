"""How a solve is run: one frozen `SolveOptions`, checked once, and the rule that picks the engine (docs/theory.md §9).

The public entry points (`sp_ode.simulate`, `sp_ode.simulate_reduced`) check their keyword
arguments into a `SolveOptions`; sweeps, the certificate, the visited region and the
identity check build one and pass it on, so no internal caller re-validates loose keyword
lists.

**The engine.**  `backend="auto"` (the default) picks, per call:

* one unbatched solve of a small system (state dimension ≤ `AUTO_SCIPY_MAX_DIM`): scipy's
  LSODA, stepped here with the vector field and its Jacobian compiled by `jax.jit` — two small
  programs compiled in a fraction of a second, so the first answer of a new model costs about
  what scipy alone costs (`bench/systems/first_answer.py`);
* a batch, batched `args`, or a larger system: diffrax's Kvaerno5, compiled once per
  (system, shapes, options), with ε, `args` and tolerances as data, `vmap`-ed over batches.

The choice and its reason are recorded in `Trajectory.stats` (`backend`, `method`,
`route`).

**Tolerances mean global error.**  A controller bounds the *local* error per step; the
error it leaves at the end of the span is larger, by a factor that depends on the method.
Each method's controller therefore runs at (rtol, atol)·`CONTROLLER_FACTOR[method]`, measured
on the stiff Test Set (VDPOL, ROBER, OREGO, HIRES at rtol 1e-4 … 1e-10, docs/bench/stiff.md) so
that every component ends within 10 tolerance units of the published reference, and never
below `RTOL_FLOOR` (closer to the unit roundoff the error estimate is rounding noise):
LSODA and BDF leave up to 226 and 328 units at their requested tolerance, Radau ≤ 0.15.
A master equation's error is far below its tolerance already and keeps factor 1 on diffrax
(`sp_ode.systems.integration`).

**Escalation.**  A solve that stops on its step budget, or whose step size or Newton
iteration fails, is retried — when `escalate` is True (the default) — up the ladder
`ESCALATION`: the same method with 8× the budget (the output buffer does not grow with it),
then another method, then scipy Radau at 8× the budget.  Each rung is recorded in
`Trajectory.stats["escalations"]`; only when the last fails is the failure returned (or
raised).  A scipy rung above the first checks, every first-attempt budget from its second on,
what the rest of the span costs at the rate of its last interval
(`sp_ode.systems.integration.predicted_steps`, counted steps, never time): when even 4× the
budget it has left is predicted short, it stops and the ladder is not climbed further, so a
hopeless solve (van der Pol to t = 1e9) fails within about 3× its first attempt with the
budget it would need, instead of minutes later.
"""
from __future__ import annotations

from dataclasses import dataclass

from sp_ode.core.validation import check_choice, check_positive, check_positive_int

__all__ = ["SolveOptions", "BACKENDS", "DIFFRAX_METHODS", "SCIPY_METHODS", "DEFAULT_MAX_STEPS",
           "AUTO_SCIPY_MAX_DIM", "CONTROLLER_FACTOR", "RTOL_FLOOR", "ESCALATION_BUDGET"]

DIFFRAX_METHODS = ("Kvaerno5", "Kvaerno4", "Kvaerno3", "Tsit5", "Dopri5", "Dopri8")
SCIPY_METHODS = ("LSODA", "Radau", "BDF")
BACKENDS = {"auto": DIFFRAX_METHODS + SCIPY_METHODS, "diffrax": DIFFRAX_METHODS, "scipy": SCIPY_METHODS}
DEFAULT_MAX_STEPS = 50_000
AUTO_SCIPY_MAX_DIM = 64          # above this, one scipy step's Python overhead no longer hides behind the LU
AUTO_METHOD = {"scipy": "LSODA", "diffrax": "Kvaerno5"}
ESCALATION_BUDGET = 8            # each rung of the ladder multiplies the step budget by this

# The controller runs at (rtol, atol)·factor so that the *global* error meets the request (module
# docstring); measured on the Test Set at rtol 1e-4 … 1e-10 (bench/systems/stiff.py, docs/bench/stiff.md).
CONTROLLER_FACTOR = {"LSODA": 1e-2, "BDF": 1e-2, "Radau": 1.0,
                     "Kvaerno5": 1e-2, "Kvaerno4": 1e-2, "Kvaerno3": 1e-2,
                     "Tsit5": 1.0, "Dopri5": 1.0, "Dopri8": 1.0}
RTOL_FLOOR = 1e-13               # ≈ 450 unit roundoffs: below it the error estimate is rounding noise


def controller_tolerances(method: str, rtol: float, atol: float, factor: float | None = None) -> tuple[float, float]:
    """(rtol, atol) for the controller of `method`: scaled by its factor, rtol floored at `RTOL_FLOOR`
    (never above the request: a requested tolerance is never loosened)."""
    factor = CONTROLLER_FACTOR[method] if factor is None else factor
    if factor >= 1.0:
        return rtol, atol
    scale = min(1.0, max(factor, RTOL_FLOOR / rtol))
    return rtol * scale, atol * scale


@dataclass(frozen=True)
class SolveOptions:
    """The options of one solve, checked (`SolveOptions.checked`).

    Attributes
    ----------
    backend : {"auto", "diffrax", "scipy"}
    method : str or None
        None: the backend's default (auto: chosen per call, see `route`).
    rtol, atol : float
        Requested tolerances on the global error (module docstring).
    max_steps : int
        The step budget of the first attempt.
    escalate : bool
        Climb the escalation ladder on a budget, step-size or Newton failure.
    """

    backend: str = "auto"
    method: str | None = None
    rtol: float = 1e-8
    atol: float = 1e-10
    max_steps: int = DEFAULT_MAX_STEPS
    escalate: bool = True

    @classmethod
    def checked(cls, backend: str = "auto", method: str | None = None, rtol: float = 1e-8, atol: float = 1e-10,
                max_steps: int = DEFAULT_MAX_STEPS, escalate: bool = True) -> SolveOptions:
        """Validate the arguments of a public entry point (each named in its error)."""
        backend = check_choice("backend", backend, BACKENDS)
        check_method(backend, method)
        if not isinstance(escalate, bool):
            raise TypeError(f"`escalate` must be True or False; got {type(escalate).__name__} {escalate!r}.")
        return cls(backend, method, check_positive("rtol", rtol), check_positive("atol", atol),
                   check_positive_int("max_steps", max_steps), escalate)

    def route(self, *, batched: bool, dim: int) -> tuple[str, str, str]:
        """(backend, method, reason) for a solve of state dimension `dim`, batched or not."""
        if self.backend != "auto":
            method = self.method or AUTO_METHOD[self.backend]
            return self.backend, method, "asked for"
        if self.method is not None:
            backend = "scipy" if self.method in SCIPY_METHODS else "diffrax"
            return backend, self.method, "asked for"
        if batched:
            return "diffrax", "Kvaerno5", "a batch: one vmapped compiled solve"
        if dim > AUTO_SCIPY_MAX_DIM:
            return "diffrax", "Kvaerno5", f"state dimension {dim} > {AUTO_SCIPY_MAX_DIM}"
        return "scipy", "LSODA", f"one solve of a small system (dimension {dim} ≤ {AUTO_SCIPY_MAX_DIM}): " \
                                 "compiles in a fraction of a second"


def check_method(backend: str, method: str | None) -> str | None:
    """`method` None or one of the methods of the (already checked) `backend`; a ValueError naming both."""
    if method is not None and (not isinstance(method, str) or method not in BACKENDS[backend]):
        raise ValueError(f"`method` must be one of {BACKENDS[backend]} for backend {backend!r}; got {method!r}.")
    return method
