"""Exact reversibility checks for symbolic generators: detailed balance and Kolmogorov's criterion.

Q is reversible when its stationary distribution satisfies detailed balance,
p_i Q[i, j] = p_j Q[j, i] for every pair.  Kolmogorov's criterion is the
equivalent condition on rates alone: the product of rates around every cycle
equals the product around the reversed cycle.  Both are decided exactly, by
expansion in the rates' domain (`sp_ode.symbolic.generator`).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sp_ode.core.summary import Summarised, number
from sp_ode.symbolic.generator import parse_generator
from sp_ode.symbolic.stationary import MAX_TREES, symbolic_stationary


@dataclass(frozen=True, repr=False)
class ReversibilityReport(Summarised):
    """Result of an exact reversibility check.

    Attributes
    ----------
    reversible
        The criterion held.
    method
        "detailed balance" or "Kolmogorov cycle criterion".
    violations
        Human-readable statements of each identity that failed (empty when reversible).
    checked
        Number of identities checked.
    seconds
        Wall time.
    """

    reversible: bool
    method: str
    violations: tuple[str, ...]
    checked: int
    seconds: float

    def _summary_title(self) -> str:
        return f"ReversibilityReport: {'reversible' if self.reversible else 'not reversible'} ({self.method})"

    def _summary_rows(self) -> list[tuple[str, str]]:
        rows = [("checked", f"{self.checked} identities"), ("seconds", number(self.seconds, 3))]
        return rows + [("does not hold", v[:120]) for v in self.violations[:3]]


def _names(states, n: int) -> list[str]:
    if states is None:
        return [str(k) for k in range(n)]
    names = [str(x) for x in states]
    if len(names) != n:
        raise ValueError(f"`states` must name each of the n = {n} states; got {len(names)}.")
    return names


def detailed_balance(Q: Any, *, assume_nonnegative: bool = False, max_trees: int | None = None,
                     states: Sequence[str] | None = None) -> ReversibilityReport:
    """Exact detailed balance: w_i Q[i, j] = w_j Q[j, i] for every pair i < j (w from the tree theorem).

    `states` names the states in the violations (default: their indices).  The numeric check
    for float generators is `sp_ode.check_detailed_balance`.  Raises as `symbolic_stationary`.
    """
    start = time.perf_counter()

    result = symbolic_stationary(Q, assume_nonnegative=assume_nonnegative, max_trees=max_trees or MAX_TREES)
    G, w = result._G, result.weights
    name = _names(states, G.n)
    violations, checked = [], 0
    for i in range(G.n):
        for j in range(i + 1, G.n):
            if G.entry[(i, j)] == 0 and G.entry[(j, i)] == 0:
                continue
            checked += 1
            if w[i] * G.entry[(i, j)] - w[j] * G.entry[(j, i)] != 0:
                a, b = name[i], name[j]
                violations.append(f"p_{a} Q[{a}, {b}] != p_{b} Q[{b}, {a}]")
    return ReversibilityReport(not violations, "detailed balance", tuple(violations), checked, time.perf_counter() - start)


def kolmogorov_criterion(Q: Any, *, assume_nonnegative: bool = False,
                         states: Sequence[str] | None = None) -> ReversibilityReport:
    """Exact Kolmogorov criterion: Π rates around each cycle = Π rates around it reversed.

    Needs no p_st.  First the support must be symmetric (Q[i, j] ≠ 0 ⇔ Q[j, i] ≠ 0);
    then it suffices to check the fundamental cycles of a breadth-first spanning tree of
    the undirected support: they hold iff the tree potential π (π_root = 1,
    π_j = π_i Q[i, j]/Q[j, i] along tree edges) satisfies detailed balance on every
    non-tree edge, hence on every edge, hence every cycle balances.

    Raises as `check_symbolic_generator`.
    """
    start = time.perf_counter()
    G, _ = parse_generator(Q, "Q", assume_nonnegative=assume_nonnegative)
    name = _names(states, G.n)
    E = set(G.edges)
    one_way = [(i, j) for i, j in G.edges if (j, i) not in E]
    if one_way:
        i, j = one_way[0]
        return ReversibilityReport(
            False, "Kolmogorov cycle criterion",
            tuple(f"Q[{name[a]}, {name[b]}] != 0 but Q[{name[b]}, {name[a]}] = 0 (a one-way edge cannot balance)"
                  for a, b in one_way),
            len(one_way), time.perf_counter() - start,
        )
    nbrs: dict[int, list[int]] = {v: [] for v in range(G.n)}
    for i, j in G.edges:
        nbrs[i].append(j)
    parent = {0: None}
    queue = [0]
    for u in queue:
        for v in sorted(nbrs[u]):
            if v not in parent:
                parent[v] = u
                queue.append(v)

    def path_to_root(v: int) -> list[int]:
        path = [v]
        while parent[path[-1]] is not None:
            path.append(parent[path[-1]])
        return path

    violations, checked = [], 0
    for i, j in G.edges:
        if i > j or parent.get(j) == i or parent.get(i) == j:
            continue
        # Fundamental cycle of the non-tree edge i–j: i → j, then j up to the common ancestor and down to i.
        pi, pj = path_to_root(i), path_to_root(j)
        common = next(v for v in pi if v in set(pj))
        cycle = [i] + pj[: pj.index(common) + 1] + pi[: pi.index(common)][::-1]
        cycle = cycle[:-1] if cycle[-1] == i else cycle
        forward = G.domain.one
        backward = G.domain.one
        for a, b in zip(cycle, cycle[1:] + cycle[:1]):
            forward *= G.entry[(a, b)]
            backward *= G.entry[(b, a)]
        checked += 1
        if forward - backward != 0:
            violations.append("cycle " + " -> ".join(name[v] for v in cycle + cycle[:1]) + " does not balance")
    return ReversibilityReport(not violations, "Kolmogorov cycle criterion", tuple(violations), checked, time.perf_counter() - start)
