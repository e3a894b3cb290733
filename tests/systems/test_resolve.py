"""sp_ode.systems.resolve: one door from every accepted object to its system, one ε per catalogue model."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import sp_ode
from sp_ode.networks.models import get_network_model
from sp_ode.systems.network import NetworkPath, NetworkSystem
from sp_ode.systems.resolve import as_system, load_system


def test_every_accepted_object_resolves_by_type():
    entry = sp_ode.get_system("michaelis_menten")
    assert as_system(entry) is entry.system
    assert as_system(entry.system) is entry.system
    model = get_network_model("telegraph", N=20)
    net = as_system(model)
    assert isinstance(net, NetworkSystem) and net.eps == model.eps and net.name == "telegraph"
    assert as_system(net) is net
    with pytest.raises(TypeError, match=r"`system` must be .* got dict"):
        as_system({"f": None})


def test_strings_name_the_same_objects():
    assert isinstance(load_system("michaelis_menten"), sp_ode.systems.CatalogueEntry)
    assert load_system("network:birth_death").name == "birth_death"
    assert isinstance(as_system(load_system("family:cycle3")), sp_ode.MasterEquationSystem)
    with pytest.raises(ValueError, match=r"unknown network model"):
        load_system("network:nope")
    with pytest.raises(ValueError, match=r"`--system` must be one of"):
        load_system("nope", name="--system")


def test_one_catalogue_model_has_one_eps_at_every_door():
    """verify, the sweep command and φ_θ used to build a catalogue network at ε = 1e-2, 1e-3 and 1e-3."""
    from neural.phi.families import resolve_system as phi_system
    from sp_ode.cli.sweep import resolve_system as sweep_system
    from sp_ode.verification.report import resolve_case

    model = get_network_model("birth_death")
    at_verify = resolve_case(model).system.eps
    at_sweep = sweep_system("network:birth_death")[0].eps
    at_phi = phi_system("network:birth_death").system.eps
    assert at_verify == at_sweep == at_phi == model.eps
    # ... and a model that declares another ε keeps it everywhere
    other = dataclasses.replace(model, eps=3e-4)
    assert resolve_case(other).system.eps == as_system(other).eps == 3e-4


def test_simulate_takes_a_network_system_and_stays_within_eps_of_the_reduced_closed_form():
    """The full sparse solve from the critical manifold follows the Rao–Arkin reduced flow to O(ε) (T2)."""
    model = get_network_model("michaelis_menten", E_T=3)
    t = np.linspace(0.0, 2.0, 5)
    exact = model.closed_form["reduced y"](t, model.y0)
    errors = []
    for eps in (1e-2, 1e-3):
        path = sp_ode.simulate(dataclasses.replace(model, eps=eps), (0.0, 2.0), None, model.y0, ts=t, rtol=1e-10,
                               atol=1e-12)
        assert isinstance(path, NetworkPath) and path.status == 0 and path.kind == "full"
        errors.append(np.abs(path.y[:, 0] - exact).max())
    assert errors[1] < 0.2 * errors[0]          # first order in ε: a tenfold ε, about a tenth of the error
    assert errors[0] < 1e-1
    with pytest.raises(ValueError, match=r"`backend` must be 'auto' or 'scipy' for the NetworkSystem"):
        sp_ode.simulate(model, (0.0, 1.0), None, model.y0, backend="diffrax")


def test_a_users_entry_is_recognised_by_its_declared_protocol():
    """The guide's entry (any object with .system, .t_span, .x0, .y0) resolves; one whose .system is no system,
    or that lacks a default, does not."""
    from types import SimpleNamespace

    from sp_ode.systems.resolve import EntryLike

    system = sp_ode.get_system("toy").system
    entry = SimpleNamespace(system=system, t_span=(0.0, 1.0), x0=[1.0], y0=[1.0])
    assert isinstance(entry, EntryLike) and as_system(entry) is system
    with pytest.raises(TypeError, match=r"got SimpleNamespace"):
        as_system(SimpleNamespace(system="toy", t_span=(0.0, 1.0), x0=[1.0], y0=[1.0]))
    with pytest.raises(TypeError, match=r"got SimpleNamespace"):
        as_system(SimpleNamespace(system=system, x0=[1.0], y0=[1.0]))          # no t_span: not an entry
