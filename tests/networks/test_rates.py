"""sp_ode.networks._rates: reaction strings and rates are parsed by the shared grammar, never evaluated.

The planted payload (tests/payloads.py) runs `touch marker` when evaluated; each route
here must refuse it with a NetworkSyntaxError naming the reaction and the token, and the
marker must never appear.
"""
from __future__ import annotations

import pytest
import sympy

from sp_ode.networks._rates import NetworkSyntaxError, Reaction, parse_rate
from sp_ode.networks.network import ReactionNetwork
from sp_ode.systems.network import NetworkSystem
from tests.payloads import assert_not_run, payload


def test_the_payload_runs_under_eval(tmp_path):
    """The route tests below are meaningful: evaluating this text does run the command."""
    marker = tmp_path / "evaluated"
    eval(payload(marker))  # test-only: proves the payload is live
    assert marker.exists()


def test_reaction_string_payload_is_refused_before_anything_runs(tmp_path):
    marker = tmp_path / "marker"
    with pytest.raises(NetworkSyntaxError) as exc:
        ReactionNetwork(f"birth: 0 -> M, {payload(marker)}; M -> 0, g", parameters={"g": 1.0})
    assert exc.value.reaction == "birth" and exc.value.token == "["
    assert "reaction 'birth'" in str(exc.value) and "'['" in str(exc.value)
    assert_not_run(marker)


def test_reaction_object_and_slow_ode_payloads_are_refused(tmp_path):
    marker = tmp_path / "marker"
    with pytest.raises(NetworkSyntaxError, match="reaction 'R'"):
        ReactionNetwork([Reaction("R", (), (("M", 1),), payload(marker))])
    assert_not_run(marker)
    net = ReactionNetwork("0 -> M, k*y; M -> 0, 1", parameters={"k": 2.0}, slow=["y"])
    with pytest.raises(NetworkSyntaxError, match="the ODE of slow variable 'y'"):
        NetworkSystem(net, net.state_space({"M": 5}), {"y": payload(marker)}, eps=0.1)
    assert_not_run(marker)


def test_rates_keep_their_meaning_under_the_grammar():
    M, k, y, K = sympy.symbols("M k y K")
    assert parse_rate("k*y^2/(K + M)", "R") == k * y**2 / (K + M)
    assert parse_rate("piecewise(k, M > 3, 0)", "R") == sympy.Piecewise((k, M > 3), (0, True))
    net = ReactionNetwork("0 => M, piecewise(k, M < 3, 0); M -> 0, 1", parameters={"k": 5.0})
    assert net.propensities([[0], [2], [3], [4]])[0].tolist() == [5.0, 5.0, 0.0, 0.0]


def test_syntax_error_carries_position_and_reaction():
    with pytest.raises(NetworkSyntaxError) as exc:
        ReactionNetwork("A -> B, k*.x")
    assert exc.value.reaction == "R1" and exc.value.token == "." and exc.value.position == 2


# --- bounded work and division by zero (issue 35, item 8) ---------------------------------------

@pytest.mark.parametrize("rate, rule", [
    ("10^(2000000001/2)", "MAX_EXACT_BITS"), ("sqrt(2)^(10^11)", "MAX_EXACT_BITS"),
    ("*".join(["10^2400"] * 3000), "MAX_TERMS"), ("+".join(f"k*A^{i % 7}" for i in range(4000)), "MAX_TERMS"),
    ("1/0", "division by zero"), ("k/(A - A)", "division by zero"), ("log(0)", "division by zero"),
])
def test_rates_that_grow_or_divide_by_zero_are_refused_naming_the_reaction(rate, rule):
    with pytest.raises(NetworkSyntaxError, match=rule) as exc:
        ReactionNetwork(f"0 -> A, 1; deg: A -> 0, {rate}", parameters={"k": 1.0})
    assert exc.value.reaction == "deg" and "reaction 'deg'" in str(exc.value)


def test_a_rate_beyond_float64_is_refused_and_a_sympy_rate_is_checked_too():
    # 10^400 is exact and within MAX_EXACT_BITS, but no float64 holds it (was an untyped OverflowError)
    with pytest.raises(NetworkSyntaxError, match="float64 range") as exc:
        ReactionNetwork("0 -> A, 1; deg: A -> 0, 10^400")
    assert exc.value.reaction == "deg"
    # a rate handed over as a sympy object bypasses the grammar: the network checks it (was KeyError 'ComplexInfinity')
    zoo = Reaction("deg", (("A", 1),), (), "1/0", mass_action=True, expression=sympy.zoo)
    with pytest.raises(NetworkSyntaxError, match="divides by zero") as exc:
        ReactionNetwork([Reaction("birth", (), (("A", 1),), "1"), zoo])
    assert exc.value.reaction == "deg"
    ReactionNetwork("0 -> A, 1; deg: A -> 0, 10^300")   # negative control: within float64
