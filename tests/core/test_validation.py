"""sp_ode.core.validation: each validator returns the checked value and names the argument, the rule and what
was seen — and refuses what its rule refuses (each rule shown to fire)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sp_ode.core.validation import (
    check_choice,
    check_finite,
    check_finite_array,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_real,
)


def test_values_that_pass_come_back_converted():
    assert check_choice("mode", "b", ("a", "b")) == "b"
    assert check_real("x", np.float32(0.5)) == 0.5 and isinstance(check_real("x", 3), float)
    assert check_real("x", np.array(2.0)) == 2.0                      # 0-d array
    assert check_positive("tol", 1e-300) == 1e-300
    assert check_nonnegative("c", 0.0) == 0.0
    assert check_positive_int("n", np.int64(7)) == 7 and type(check_positive_int("n", np.int64(7))) is int
    arr = check_finite_array("x0", [1, 2], ndim=1)
    assert arr.dtype == np.float64 and arr.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("call, error, words", [
    (lambda: check_choice("mode", "c", ("a", "b")), ValueError, ["`mode`", "('a', 'b')", "'c'"]),
    (lambda: check_choice("mode", 1, ("a",)), ValueError, ["`mode`", "got 1"]),
    (lambda: check_real("x", True), TypeError, ["`x`", "real number", "bool"]),
    (lambda: check_real("x", "1.0"), TypeError, ["`x`", "str"]),
    (lambda: check_real("x", 1 + 2j), TypeError, ["`x`", "complex"]),
    (lambda: check_finite("eps", math.inf), ValueError, ["`eps`", "finite", "inf"]),
    (lambda: check_finite("eps", math.nan), ValueError, ["`eps`", "finite", "nan"]),
    (lambda: check_positive("tol", 0.0), ValueError, ["`tol`", "> 0", "0.0"]),
    (lambda: check_positive("tol", -1), ValueError, ["`tol`", "> 0", "-1"]),
    (lambda: check_nonnegative("c", -1e-9), ValueError, ["`c`", ">= 0"]),
    (lambda: check_positive_int("n", 2.0), TypeError, ["`n`", "positive integer", "float"]),
    (lambda: check_positive_int("n", True), TypeError, ["`n`", "bool"]),
    (lambda: check_positive_int("n", 0), ValueError, ["`n`", "positive integer", "0"]),
    (lambda: check_finite_array("x0", [[1, 2], [3]]), TypeError, ["`x0`", "array-like"]),
    (lambda: check_finite_array("x0", ["a"]), TypeError, ["`x0`", "numeric", "dtype"]),
    (lambda: check_finite_array("x0", [1j]), TypeError, ["`x0`", "complex"]),
    (lambda: check_finite_array("x0", [1.0, 2.0], ndim=2), ValueError, ["`x0`", "2-D", "(2,)"]),
    (lambda: check_finite_array("x0", [1.0, np.nan]), ValueError, ["`x0`", "finite", "index (1,)"]),
])
def test_each_rule_names_the_argument_and_what_was_seen(call, error, words):
    with pytest.raises(error) as info:
        call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_a_long_value_is_shortened_in_the_message():
    with pytest.raises(ValueError) as info:
        check_choice("mode", "x" * 500, ("a",))
    assert len(str(info.value)) < 200 and str(info.value).endswith("....")
