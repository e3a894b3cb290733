"""Reading symbolic generators and claimed formulas from text or JSON files (docs/theory.md §2, §3.1).

A generator file is one of

* **rate lines** (any suffix but `.json`):

      # an enzyme: E + S <-> ES -> E + P, P released from EP
      states: E ES EP          # optional; default: order of first appearance
      E  -> ES : k1*s
      ES -> E  : km1
      ES -> EP : k2
      EP -> E  : k3

  one transition `i -> j : rate` per line; states are names or integers
  (integers alone number the states 0 … n−1); a repeated pair adds its rates;
* **a matrix**, one row per line, entries separated by commas; a diagonal
  entry `*` means "minus the sum of the row's rates";
* **JSON**: `{"rates": [[i, j, "rate"], …], "states": […]}`, `{"Q": [[…], …]}`
  or a bare list of rows, entries as strings or integers.

Rates are read by the grammar of `sp_ode.core.expressions` (parsed, never
evaluated; `pi` is π and `Rational(a, b)` is a/b besides its function table) with
decimal numbers kept exact (`0.5` → 1/2); every symbol is declared **positive** (a rate constant), except those listed on a
`real: y` line (`"real": ["y"]` in JSON), which are real — e.g. a slow
variable entering through `exp(y)`.  A claim file (`--claim`) is a JSON list
of n expressions (or `{"p": […]}`), or text with one `expr` or
`STATE : expr` per line, read with the generator's own symbols.

Every error is a `GeneratorFileError` naming the file, the line (or JSON field)
and the rule broken.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import sympy

from sp_ode.core.errors import Error
from sp_ode.core.expressions import FUNCTIONS, ExpressionSyntaxError, build_operator, parse_expression as _parse

__all__ = ["GeneratorFileError", "GeneratorFile", "read_generator", "read_claim", "parse_expression"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$|^[0-9]+$")
# The shared table plus the exact fraction Rational(a, b) that earlier files used.
_FUNCTIONS = {**FUNCTIONS, "Rational": (2, 2, lambda args, ctx: build_operator("/", *args, where=ctx[0]))}


class GeneratorFileError(Error, ValueError):
    """A generator or claim file breaks a rule of the format; the message names file, place and rule."""


@dataclass(frozen=True)
class GeneratorFile:
    """A symbolic generator read from a file.

    Attributes
    ----------
    Q : sympy.ImmutableMatrix (n, n)
        Rows summing to zero.
    states
        The n state labels, in the order of Q's rows.
    symbols
        Name -> sympy Symbol (with its declared sign), for reading claims.
    path
        The file read.
    """

    Q: sympy.ImmutableMatrix
    states: tuple[str, ...]
    symbols: dict
    path: str

    @property
    def n(self) -> int:
        return self.Q.rows


def parse_expression(text: str, symbols: dict, *, where: str, real: frozenset = frozenset(),
                     known_only: bool = False) -> sympy.Expr:
    """Parse one rate or claimed entry exactly; new names become positive (or real) symbols in `symbols`.

    The text is read by the grammar of `sp_ode.core.expressions`: nothing is evaluated.

    Raises
    ------
    GeneratorFileError
        Text outside the grammar (the message names the offending token), or (with
        `known_only`) a name the generator does not use.
    """
    text = text.strip()
    if not text:
        raise GeneratorFileError(f"{where}: the expression is empty.")

    def symbol(name: str) -> sympy.Symbol:
        if name not in symbols:
            if known_only:
                raise GeneratorFileError(
                    f"{where}: {name!r} is not a symbol of the generator (its symbols: "
                    f"{', '.join(sorted(symbols)) or 'none'})."
                )
            symbols[name] = sympy.Symbol(name, real=True) if name in real else sympy.Symbol(name, positive=True)
        return symbols[name]

    try:
        return _parse(text, where=f"{where}: not a valid expression", symbol=symbol, exact=True,
                      functions=_FUNCTIONS, constants={"pi": sympy.pi})
    except ExpressionSyntaxError as exc:
        raise GeneratorFileError(str(exc)) from None


def _strip(line: str) -> str:
    return line.split("#", 1)[0].strip()


def _order_states(labels: list[str], declared: list[str] | None, path: str) -> list[str]:
    if declared is not None:
        return declared
    if labels and all(lab.isdigit() for lab in labels):
        n = 1 + max(int(lab) for lab in labels)
        return [str(i) for i in range(n)]
    seen: list[str] = []
    for lab in labels:
        if lab not in seen:
            seen.append(lab)
    return seen


def _build(rates: list[tuple[str, str, sympy.Expr, str]], states: list[str], symbols: dict,
           path: str) -> GeneratorFile:
    index = {s: k for k, s in enumerate(states)}
    n = len(states)
    if n == 0:
        raise GeneratorFileError(f"{path}: no transitions found (expected lines `i -> j : rate`).")
    R = sympy.zeros(n, n)
    for i, j, rate, where in rates:
        for lab in (i, j):
            if lab not in index:
                raise GeneratorFileError(f"{where}: state {lab!r} is not in the declared states {states}.")
        if i == j:
            raise GeneratorFileError(f"{where}: a transition must join two different states; got {i} -> {j}.")
        R[index[i], index[j]] += rate
    for k in range(n):
        R[k, k] = -sum(R[k, m] for m in range(n) if m != k)
    return GeneratorFile(sympy.ImmutableMatrix(R), tuple(states), symbols, path)


def _matrix(rows: list[list[str]], wheres: list[str], symbols: dict, real: frozenset, path: str) -> GeneratorFile:
    n = len(rows)
    for row, where in zip(rows, wheres):
        if len(row) != n:
            raise GeneratorFileError(
                f"{where}: a generator matrix must be square; this row has {len(row)} entries, "
                f"the matrix {n} rows."
            )
    M = sympy.zeros(n, n)
    for i, (row, where) in enumerate(zip(rows, wheres)):
        auto = False
        for j, cell in enumerate(row):
            cell = str(cell).strip()
            if i == j and cell == "*":
                auto = True
                continue
            M[i, j] = parse_expression(cell, symbols, where=f"{where}, entry {j}", real=real)
        if auto:
            M[i, i] = -sum(M[i, m] for m in range(n) if m != i)
    return GeneratorFile(sympy.ImmutableMatrix(M), tuple(str(i) for i in range(n)), symbols, path)


def _read_text(path: str, text: str) -> GeneratorFile:
    symbols: dict = {}
    real: set[str] = set()
    declared: list[str] | None = None
    transitions: list[tuple[str, str, str, str]] = []
    rows: list[list[str]] = []
    row_wheres: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = _strip(raw)
        where = f"{path}, line {lineno}"
        if not line:
            continue
        key, sep, rest = line.partition(":")
        if sep and key.strip() in ("states", "real"):
            names = rest.replace(",", " ").split()
            for name in names:
                if not _NAME.match(name):
                    raise GeneratorFileError(f"{where}: {name!r} is not a valid name (letters, digits, _).")
            if key.strip() == "states":
                if len(set(names)) != len(names) or not names:
                    raise GeneratorFileError(f"{where}: `states:` must list distinct names; got {names}.")
                declared = names
            else:
                real.update(names)
            continue
        if "->" in line:
            if rows:
                raise GeneratorFileError(f"{where}: a file is either rate lines or a matrix, not both.")
            arrow, sep, rate = line.partition(":")
            i, _, j = (s.strip() for s in arrow.partition("->"))
            if not sep or not rate.strip():
                raise GeneratorFileError(f"{where}: a transition is written `i -> j : rate`; got {raw.strip()!r}.")
            for lab in (i, j):
                if not _NAME.match(lab):
                    raise GeneratorFileError(f"{where}: state {lab!r} must be a name or an integer.")
            transitions.append((i, j, rate, where))
        else:
            if transitions:
                raise GeneratorFileError(f"{where}: a file is either rate lines or a matrix, not both; "
                                         f"expected `i -> j : rate`, got {raw.strip()!r}.")
            rows.append(line.split(","))
            row_wheres.append(where)
    real_f = frozenset(real)
    if rows:
        return _matrix(rows, row_wheres, symbols, real_f, path)
    states = _order_states([lab for t in transitions for lab in t[:2]], declared, path)
    rates = [(i, j, parse_expression(r, symbols, where=w, real=real_f), w) for i, j, r, w in transitions]
    return _build(rates, states, symbols, path)


def _read_json(path: str, text: str) -> GeneratorFile:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GeneratorFileError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    symbols: dict = {}
    real: list = []
    if isinstance(data, dict):
        real = data.get("real", [])
        if not isinstance(real, list) or not all(isinstance(r, str) for r in real):
            raise GeneratorFileError(f"{path}: field `real` must be a list of symbol names; got {real!r}.")
        unknown = set(data) - {"rates", "states", "Q", "real"}
        if unknown:
            raise GeneratorFileError(f"{path}: unknown field(s) {sorted(unknown)}; expected `rates` or `Q` "
                                     "(with optional `states`, `real`).")
    real_f = frozenset(real)
    if isinstance(data, dict) and "rates" in data:
        items = data["rates"]
        if not isinstance(items, list):
            raise GeneratorFileError(f"{path}: field `rates` must be a list of [i, j, rate]; got {type(items).__name__}.")
        rates, labels = [], []
        for k, item in enumerate(items):
            where = f"{path}, field rates[{k}]"
            if not (isinstance(item, list) and len(item) == 3 and isinstance(item[2], (str, int))):
                raise GeneratorFileError(f"{where}: each rate must be [i, j, \"rate\"]; got {item!r}.")
            i, j = str(item[0]), str(item[1])
            labels += [i, j]
            rates.append((i, j, parse_expression(str(item[2]), symbols, where=where, real=real_f), where))
        declared = data.get("states")
        if declared is not None and not (isinstance(declared, list) and len(set(map(str, declared))) == len(declared)):
            raise GeneratorFileError(f"{path}: field `states` must be a list of distinct names; got {declared!r}.")
        states = _order_states(labels, None if declared is None else [str(s) for s in declared], path)
        return _build(rates, states, symbols, path)
    rows = data.get("Q") if isinstance(data, dict) else data
    field = "field Q" if isinstance(data, dict) else "top level"
    if not (isinstance(rows, list) and rows and all(isinstance(r, list) for r in rows)):
        raise GeneratorFileError(f"{path}: {field} must be a non-empty list of rows (lists of expressions).")
    for r in rows:
        for cell in r:
            if not isinstance(cell, (str, int)) or isinstance(cell, bool):
                raise GeneratorFileError(f"{path}, {field}: entries must be strings or integers "
                                         f"(floats are not exact); got {cell!r}.")
    return _matrix([[str(c) for c in r] for r in rows], [f"{path}, {field} row {i}" for i in range(len(rows))],
                   symbols, real_f, path)


def _read_file(path: str | Path, what: str) -> tuple[str, str]:
    p = Path(path)
    if p.is_dir():
        raise GeneratorFileError(f"{p}: {what} must be a file; got a directory.")
    if not p.is_file():
        raise GeneratorFileError(f"{p}: {what} does not exist.")
    try:
        return str(p), p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise GeneratorFileError(f"{p}: {what} must be UTF-8 text.") from None


def read_generator(path: str | Path) -> GeneratorFile:
    """Read a symbolic generator from a text or JSON file (format: this module's docstring).

    Returns
    -------
    GeneratorFile
        Q has exact entries and rows summing to zero; irreducibility and signs are checked
        later by `sp_ode.symbolic_stationary`.

    Raises
    ------
    GeneratorFileError
        A missing file, a directory, or a line/field that breaks the format (named in the message).
    """
    name, text = _read_file(path, "the generator file")
    if name.lower().endswith(".json"):
        return _read_json(name, text)
    return _read_text(name, text)


def read_claim(path: str | Path, generator: GeneratorFile) -> list[sympy.Expr]:
    """Read a claimed p_st (n expressions in the generator's symbols) from JSON or text.

    Raises
    ------
    GeneratorFileError
        Wrong number of entries, an unknown state label, a name that is not a symbol of the
        generator, or a syntax error (each message names file and line/entry).
    """
    name, text = _read_file(path, "the claim file")
    n, states = generator.n, list(generator.states)
    symbols = dict(generator.symbols)
    entries: list[tuple[str | None, str, str]] = []
    if name.lower().endswith(".json"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GeneratorFileError(f"{name}: not valid JSON ({exc.msg} at line {exc.lineno}).") from None
        items = data.get("p") if isinstance(data, dict) else data
        if not isinstance(items, list) or not all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in items):
            raise GeneratorFileError(f"{name}: a claim must be a JSON list of n expression strings (or {{\"p\": [...]}}).")
        entries = [(None, str(x), f"{name}, entry {k}") for k, x in enumerate(items)]
    else:
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = _strip(raw)
            if not line:
                continue
            label, sep, expr = line.partition(":")
            if not sep:
                label, sep, expr = line.partition("=")
            if sep and _NAME.match(label.strip().removeprefix("p_").strip("[] ")):
                entries.append((label.strip(), expr, f"{name}, line {lineno}"))
            else:
                entries.append((None, line, f"{name}, line {lineno}"))
    if len(entries) != n:
        raise GeneratorFileError(f"{name}: a claim must give n = {n} entries (one per state {states}); got {len(entries)}.")
    p: list = [None] * n
    for k, (label, expr, where) in enumerate(entries):
        slot = k
        if label is not None:
            bare = label.removeprefix("p_").strip("[] ") if label not in states else label
            if bare not in states:
                raise GeneratorFileError(f"{where}: {label!r} is not a state of the generator {states}.")
            slot = states.index(bare)
            if p[slot] is not None:
                raise GeneratorFileError(f"{where}: state {bare!r} is claimed twice.")
        p[slot] = parse_expression(expr, symbols, where=where, known_only=True)
    return p
