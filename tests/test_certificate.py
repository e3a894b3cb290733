"""The convergence certificate (sp_ode.systems.certificate) on the toy of docs/theory.md §6."""
from __future__ import annotations

import json
import math

import pytest

import sp_ode
from sp_ode.core.files import dumps
from sp_ode.systems.certificate import convergence_certificate

PS = (64, 128, 256, 512, 1024, 2048, 4096)


@pytest.fixture(scope="module")
def toy():
    return sp_ode.get_system("toy")


@pytest.fixture(scope="module")
def cert(toy):
    return convergence_certificate(toy, PS, order=1)


def test_toy_slopes(cert):
    # Tikhonov O(ε) to φ and in y, Fenichel O(ε²) to φ + εh₁ (docs/theory.md §3.2 (T2), T3), as fitted slopes
    assert cert.passed, cert.messages
    assert abs(cert.slopes["manifold"] - 1) <= 0.15
    assert abs(cert.slopes["corrected"] - 2) <= 0.15
    assert abs(cert.slopes["slow"] - 1) <= 0.15
    assert all(cert.fitted[q].all() for q in cert.fitted)  # nothing fell below the error floor


def test_toy_constants_at_final_time(cert):
    # Closed forms at t = 2 (y_red = 1/3), leading order in ε:
    #   x − φ(y)        ≈ ε h₁(1/3) = 2ε/27
    #   x − φ − εh₁     ≈ ε² h₂(1/3) = 10ε²/81              (h₂ = 10y⁴, test_slow_manifold)
    #   y − y_red       ≈ ε (1 − 2 ln 3)/9 in size          (linearising y' = −(y² + 2εy³) about
    #                     y_red = 1/(1+t) with the layer shift η(0) = 1: (η(1+t)²)' = −2/(1+t))
    # docs/theory.md §6 lists 0.741ε, 1.23ε², 1.33ε: ten times these; the closed forms above and the
    # measurement agree to 0.3 %, so we test the closed forms.
    # Tolerance 1 %: the next-order terms are O(ε) relative, 2.4e-4 at P = 4096.
    expected = {"manifold": 2 / 27, "corrected": 10 / 81, "slow": (2 * math.log(3) - 1) / 9}
    for q, value in expected.items():
        assert cert.final_constants[q] == pytest.approx(value, rel=1e-2), q


def test_table_json_and_plot(cert, tmp_path):
    rows = cert.rows()
    assert [r["P"] for r in rows] == list(PS)
    record = json.loads(dumps(cert.to_dict()))
    assert record["slopes"]["corrected"] == pytest.approx(cert.slopes["corrected"])
    text = cert.format_table()
    assert "PASSED" in text and "4096" in text
    png = cert.plot(tmp_path / "c.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_wrong_expectation_fails(toy):
    # the verdict is not vacuous: fitted slopes carry pre-asymptotic O(ε) bias (here ~1e-2),
    # so with a tolerance of 1e-6 the same measurement must fail, naming the slope
    c = convergence_certificate(toy, PS[:3], order=0, slope_tol=1e-6)
    assert not c.passed and any("slope" in m for m in c.messages)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"Ps": (4, 8)}, ValueError, "at least 3"),
    ({"Ps": (4, 8, 8)}, ValueError, "repeat"),
    ({"Ps": (4, 0, 8)}, ValueError, "Ps\\[1\\]"),
    ({"Ps": (4, 8.5, 16)}, TypeError, "Ps\\[1\\]"),
    ({"Ps": "4 8 16"}, TypeError, "`Ps`"),
    ({"order": -1}, ValueError, "`order`"),
    ({"backend": "jax"}, ValueError, "`backend`"),
    ({"t0_layer": 5.0}, ValueError, "`t0_layer`"),
    ({"rtol": 0.0}, ValueError, "`rtol`"),
])
def test_bad_input(toy, kwargs, exc, match):
    kwargs = {"Ps": (4, 8, 16), **kwargs}
    with pytest.raises(exc, match=match):
        convergence_certificate(toy, **kwargs)


def test_bare_system_needs_initial_data(toy):
    with pytest.raises(ValueError, match="`t_span` is required"):
        convergence_certificate(toy.system, (4, 8, 16))
