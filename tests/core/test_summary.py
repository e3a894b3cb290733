"""Short summaries of result objects (sp_ode/core/summary.py): text, repr and the notebook's HTML."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy

from sp_ode.core.summary import Summarised, number, shape_of
from sp_ode.symbolic.reversibility import detailed_balance
from sp_ode.symbolic.stationary import symbolic_stationary


@dataclass(repr=False)
class _Result(Summarised):
    history: dict
    value: float

    def _summary_rows(self):
        return [("value", number(self.value)), ("history", shape_of(self.history))]


def test_a_summary_names_sizes_not_contents():
    r = _Result(history={"loss": list(range(300))}, value=1 / 3)
    text = repr(r)
    assert text == r.summary() and text.splitlines()[0] == "_Result"
    assert "0.3333" in text and "list of 300" in text and "299" not in text    # no history dump
    html = r._repr_html_()
    assert html.startswith("<div>") and "<table>" in html and "list of 300" in html
    assert shape_of(np.zeros((200, 3))) == "array (200, 3)"


def test_symbolic_results_print_short_summaries():
    a, b, c = sympy.symbols("a b c", positive=True)
    Q = sympy.Matrix([[-a, a, 0], [0, -b, b], [c, 0, -c]])      # a 3-cycle: p ∝ (bc, ac, ab)
    result = symbolic_stationary(Q)
    text = repr(result)
    assert "3-state generator" in text and "p[0]" in text and "b*c" in text and "_G" not in text
    cert = result.verify()
    assert repr(cert).startswith("StationaryCertificate: TRUE") and "hold exactly" in repr(cert)
    rev = detailed_balance(Q)
    assert repr(rev).startswith("ReversibilityReport: not reversible") and "does not hold" in repr(rev)
