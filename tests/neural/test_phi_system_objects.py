"""fit-phi accepts a MasterEquationSystem and refuses a general FastSlowSystem (issue 13, item 4)."""
from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest

import sp_ode
from neural.phi.families import generators_at, resolve_system
from sp_ode.cli import main

YS = np.linspace(-2.0, 2.0, 9)[:, None]


def _cycle3_by_hand(y):
    # sp_ode.markov.families._cycle3, written out: rates 0→1 2e^y, 0→2 0.5, 1→0 1, 1→2 1 + e^{−y},
    # 2→0 1.5e^{y/2}, 2→1 0.3; the diagonal makes the rows sum to zero.
    R = np.array([[0.0, 2 * np.exp(y), 0.5], [1.0, 0.0, 1 + np.exp(-y)], [1.5 * np.exp(y / 2), 0.3, 0.0]])
    return R - np.diag(R.sum(axis=1))


@pytest.mark.parametrize("as_entry", [True, False])
def test_master_equation_system_is_its_generator_family(as_entry):
    entry = sp_ode.get_system("me3")                       # MasterEquationSystem over the cycle3 family
    ps = resolve_system(entry if as_entry else entry.system)
    assert (ps.name, ps.n, ps.d) == ("me3", 3, 1)
    np.testing.assert_array_equal(ps.lower, [-2.0])        # the family's own box
    np.testing.assert_array_equal(ps.upper, [2.0])
    Qs, keep = generators_at(ps, YS)
    assert keep.all()
    for y, Q in zip(YS, Qs):
        np.testing.assert_allclose(Q, np.asarray(entry.system.Q(y)), rtol=0, atol=1e-15)
        np.testing.assert_allclose(Q, _cycle3_by_hand(y[0]), rtol=1e-14, atol=1e-15)


def _switch_Q(y):
    a = jnp.exp(y[0])
    return jnp.array([[-a, a], [1.0, -1.0]])


def _switch_g(t, x, y, args):
    return jnp.array([x[1] - 0.5])


def test_master_equation_over_a_user_callable_needs_a_domain():
    system = sp_ode.MasterEquationSystem(_switch_Q, _switch_g, eps=0.01, d=1, name="switch")
    with pytest.raises(ValueError, match="`domain` is required for a user-supplied Q\\(y\\) \\(switch\\)"):
        resolve_system(system)
    ps = resolve_system(system, [-1.0, 1.0])
    assert (ps.name, ps.n, ps.d) == ("switch", 2, 1)
    Qs, _ = generators_at(ps, YS / 2)
    a = np.exp(YS[:, 0] / 2)
    # float64 throughout: e^y to rounding, not float32's 1e-7
    np.testing.assert_allclose(Qs[:, 0, 1], a, rtol=1e-15)
    np.testing.assert_allclose(Qs[:, 1], np.broadcast_to([1.0, -1.0], (9, 2)))
    with pytest.raises(ValueError, match="`domain` must give d = 1"):
        resolve_system(system, [-1.0, 1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="`d` = 2 does not match system 'switch', which has d = 1"):
        resolve_system(system, [-1.0, 1.0], d=2)


@pytest.mark.parametrize("name", ["fitzhugh_nagumo", "toy"])
def test_general_fast_slow_system_is_refused_with_the_reason(name):
    entry = sp_ode.get_system(name)
    for obj in (entry, entry.system):
        with pytest.raises(TypeError) as info:
            resolve_system(obj, [-1.0, 1.0])
        text = str(info.value)
        assert "`system` must be a master equation" in text and f"FastSlowSystem {name!r}" in text
        assert "has no generator" in text and "sp_ode.slow_manifold(system, 0, x_guess=" in text


def test_other_objects_still_type_errors():
    with pytest.raises(TypeError, match="`system` must be a family name.*MasterEquationSystem.*got float"):
        resolve_system(1.5)


FILE = '''
import jax.numpy as jnp
import sp_ode

def Q(y):
    a = jnp.exp(y[0])
    return jnp.array([[-a, a], [1.0, -1.0]])

ME = sp_ode.MasterEquationSystem(Q, lambda x, y: jnp.array([x[1] - 0.5]), eps=0.01, d=1, name="my_switch")
FHN = sp_ode.get_system("fitzhugh_nagumo").system
'''


def test_file_object_spec(tmp_path):
    f = tmp_path / "model.py"
    f.write_text(FILE)
    ps = resolve_system(f"{f}:ME", [-1.0, 1.0])
    assert (ps.name, ps.n, ps.d) == ("my_switch", 2, 1)
    np.testing.assert_allclose(generators_at(ps, np.array([[0.0]]))[0][0], [[-1.0, 1.0], [1.0, -1.0]])
    with pytest.raises(TypeError, match=r"FastSlowSystem 'fitzhugh_nagumo' \(.*model.py:FHN\)"):
        resolve_system(f"{f}:FHN", [-1.0, 1.0])


def test_cli_fit_phi_with_a_system_object(tmp_path, capsys):
    f = tmp_path / "model.py"
    f.write_text(FILE)
    code = main(["fit-phi", "--smoke", "--json", "--steps", "3", "--system", f"{f}:ME", "--domain", "-1", "1",
                 "--out", str(tmp_path / "o")])
    assert code == 0
    record = json.loads(capsys.readouterr().out)
    assert record["system"] == "my_switch"
    assert main(["fit-phi", "--smoke", "--steps", "1", "--system", f"{f}:FHN", "--domain", "-1", "1",
                 "--out", str(tmp_path / "o2")]) == 2
    assert "has no generator" in capsys.readouterr().err


def test_named_states_reach_the_fit_phi_figure(monkeypatch, tmp_path):
    # fit-phi's figure labelled the states p_st,0 … p_st,4 although the system had `states=`
    from matplotlib.figure import Figure

    from neural.phi.figures import plot_components
    from neural.phi.fit import fit_phi
    from neural.phi.result import evaluate_phi
    from sp_ode.core.reporting import figures

    system = sp_ode.MasterEquationSystem(_switch_Q, _switch_g, eps=0.01, d=1, name="switch", states=["closed", "open"])
    ps = resolve_system(system, [-1.0, 1.0])
    assert ps.states == ("closed", "open") and ps.state_name(1) == "open"
    assert resolve_system(sp_ode.get_system("me3")).states is None        # unnamed: indices, as before
    fit = fit_phi(ps, loss="kl", steps=2, n_train=8, monitor=False)
    held = evaluate_phi(fit.model, ps, ps.grid(5))
    seen = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: seen.extend(
        t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()))
    plot_components(fit, held, evaluate_phi(fit.model, ps, np.zeros((0, 1)), extrapolation=True),
                    tmp_path / "c.png", figures())
    assert {"closed", "open"} <= set(seen) and not any("st,0" in s for s in seen)
