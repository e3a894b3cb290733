"""Spanning in-trees (arborescences) of a directed graph: the Markov chain tree theorem.

For a generator Q on n states, let G be the directed graph with an edge i → j
whenever the rate Q[i, j] (i ≠ j) is not identically zero.  A spanning in-tree
rooted at r is a set of n − 1 edges in which every state v ≠ r has exactly one
outgoing edge and following edges from any state leads to r (no cycles).  The
Markov chain tree theorem (Freidlin–Wentzell; Leighton–Rivest) says

    w_r = Σ_{in-trees T rooted at r} Π_{(i → j) ∈ T} Q[i, j]

solves Qᵀw = 0, and p_st = w / 1ᵀw for irreducible Q.

`in_trees` enumerates by backtracking: the states v ≠ r are taken in
depth-first order of the reversed graph from r, each chooses one out-edge, and
a choice is pruned the moment it closes a cycle.  Cycle detection is a
union–find over the chosen edges (union by size, no path compression, so a
choice is undone in O(1)): v, not yet assigned, heads its component, so
v → u closes a cycle exactly when u is already in v's component.  The
depth-first order matters on sparse graphs: on a ring it makes every dead end
fail one step after it starts, so the search visits O(n) nodes per in-tree
instead of the O(n²) a breadth-first order costs.

`count_in_trees` predicts the output size before any symbolic work: the number
of in-trees rooted at r is the determinant of the unit-rate Laplacian with row
and column r removed (Kirchhoff's matrix-tree theorem), evaluated in floating
point, which is plenty for a size guard.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def count_in_trees(n: int, edges: Sequence[tuple[int, int]]) -> np.ndarray:
    """Number of spanning in-trees rooted at each state, shape (n,), float64.

    Kirchhoff: with L = diag(out-degree) − adjacency (unit rates), the count for
    root r is det L with row and column r deleted.
    """
    L = np.zeros((n, n))
    for i, j in edges:
        L[i, j] -= 1.0
        L[i, i] += 1.0
    counts = np.ones(n)
    keep = np.ones(n, dtype=bool)
    for r in range(n if n > 1 else 0):
        keep[r] = False
        sign, logdet = np.linalg.slogdet(L[np.ix_(keep, keep)])
        keep[r] = True
        counts[r] = 0.0 if sign <= 0 else float(np.exp(logdet))
    return np.rint(counts)


def _dfs_order(root: int, into: list[list[int]]) -> list[int]:
    """States that can reach `root`, in depth-first preorder of the reversed graph (root excluded)."""
    seen = {root}
    order: list[int] = []
    stack = [iter(into[root])]
    while stack:
        for v in stack[-1]:
            if v not in seen:
                seen.add(v)
                order.append(v)
                stack.append(iter(into[v]))
                break
        else:
            stack.pop()
    return order


def in_trees(n: int, edges: Sequence[tuple[int, int]], root: int) -> list[tuple[int, ...]]:
    """All spanning in-trees rooted at `root`, each a tuple of n − 1 indices into `edges`.

    Parameters
    ----------
    n
        Number of states.
    edges
        The directed edges (i, j), i ≠ j, of the graph.
    root
        The root state.

    Returns
    -------
    list of tuples; empty when some state cannot reach `root`.
    """
    out: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    into: list[list[int]] = [[] for _ in range(n)]
    for k, (i, j) in enumerate(edges):
        out[i].append((j, k))
        into[j].append(i)
    order = _dfs_order(root, into)
    if len(order) != n - 1:
        return []
    # Try the out-neighbour that comes earliest in the order (nearest the root) first.
    rank = {root: -1, **{v: k for k, v in enumerate(order)}}
    choices = [sorted(out[v], key=lambda e: rank[e[0]]) for v in order]

    uf = list(range(n))
    size = [1] * n

    def find(x: int) -> int:
        while uf[x] != x:
            x = uf[x]
        return x

    chosen: list[int] = []
    trees: list[tuple[int, ...]] = []
    last = n - 2

    def search(k: int) -> None:
        v = order[k]
        rv = find(v)
        for u, e in choices[k]:
            ru = find(u)
            if ru == rv:  # u's chain already leads to v: v → u closes a cycle
                continue
            if k == last:
                chosen.append(e)
                trees.append(tuple(chosen))
                chosen.pop()
                continue
            big, small = (ru, rv) if size[ru] >= size[rv] else (rv, ru)
            uf[small] = big
            size[big] += size[small]
            chosen.append(e)
            search(k + 1)
            chosen.pop()
            size[big] -= size[small]
            uf[small] = small

    if n == 1:
        return [()]
    search(0)
    return trees
