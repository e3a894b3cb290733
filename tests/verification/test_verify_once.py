"""`sp_ode.verify` validates each input once, at its own door (project issue 33).

`verify` composes the region, identity, slow-manifold, certificate and network checks; each of those
public functions validates its inputs and then calls its checked core.  `verify` validates at its door
and calls the cores, so during one verdict every validator below runs exactly once per input.  The
counts are taken by wrapping each validator where it is bound (every `sp_ode` module that imported it),
so a call from any module is seen.  The negative control calls one public door during the verdict and
sees the count rise: the test can fail.
"""
from __future__ import annotations

import collections
import importlib
import sys

import pytest

import sp_ode
import sp_ode.systems.resolve
import sp_ode.verification.report  # noqa: F401  (every module a verdict uses, loaded before the wrapping)
from sp_ode.core import validation
from sp_ode.manifolds import critical_manifold, reduced  # noqa: F401
from sp_ode.systems import simulation  # noqa: F401
from sp_ode.verification import certificate, identity, network, region  # noqa: F401

slow_manifold = importlib.import_module("sp_ode.manifolds.slow_manifold")   # the module, not the function

VALIDATORS = {"check_order": slow_manifold.check_order, "check_Ps": certificate.check_Ps,
              "check_choice": validation.check_choice, "check_positive": validation.check_positive,
              "as_system": sp_ode.systems.resolve.as_system}


@pytest.fixture
def counts(monkeypatch):
    """Wrap every binding of each validator in the sp_ode modules; count calls by (validator, argument)."""
    seen: collections.Counter = collections.Counter()

    def counting(name, fn, where):
        def wrapper(*args, **kwargs):
            # check_choice(name, value, choices), check_positive(name, value): by the name
            key = args[0] if name in ("check_choice", "check_positive") else None
            seen[(name, key, where)] += 1
            return fn(*args, **kwargs)
        return wrapper

    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not (mod_name == "sp_ode" or mod_name.startswith("sp_ode.")):
            continue
        for name, fn in VALIDATORS.items():
            if getattr(mod, name, None) is fn:
                monkeypatch.setattr(mod, name, counting(name, fn, mod_name))
    return seen


def _per_input(seen, network: bool = False) -> dict:
    """Calls per input of `verify`: `order`, `Ps`, `backend` (check_choice of that name; other choices, e.g. a
    stationary solver's `method` fixed inside a step, are not inputs of `verify`), the network's ε = 1/P
    (check_positive "eps" where `verify_network` binds it, once per value at its door; the system's own
    methods check the ε a step passes them, which is not an input of `verify`) and the system (as_system,
    which every dense door reaches through `check_system`)."""
    network_door = "sp_ode.verification.network"
    out: collections.Counter = collections.Counter()
    for (name, key, where), n in seen.items():
        if name == "check_choice" and key != "backend":
            continue
        if name == "check_positive" and (key != "eps" or not network or where != network_door):
            continue
        out[{"check_order": "order", "check_Ps": "Ps", "as_system": "system", "check_choice": "backend",
             "check_positive": "eps"}[name]] += n
    return dict(sorted(out.items()))


def test_a_dense_verdict_validates_each_input_once(counts):
    report = sp_ode.verify(sp_ode.get_system("me3"), smoke=True)
    assert report.passed, report.failure
    got = _per_input(counts)
    assert got == {"backend": 1, "order": 1, "system": 1}, str(got)   # `Ps` not given: the default is not checked


def test_a_dense_verdict_with_Ps_validates_them_once(counts):
    report = sp_ode.verify(sp_ode.get_system("me3"), smoke=True, Ps=(16, 32, 64, 128, 256))
    assert report.checks["certificate"] in ("ok", "FAIL")
    got = _per_input(counts)
    assert got == {"backend": 1, "order": 1, "Ps": 1, "system": 1}, str(got)


@pytest.mark.slow
def test_a_network_verdict_validates_each_input_once(counts):
    model = sp_ode.get_network_model("birth_death", N=40)
    report = sp_ode.verify(model, y0=[0.5], smoke=True, Ps=(32, 64, 128, 256, 512))
    assert report.kind == "network" and report.passed, report.failure
    got = _per_input(counts, network=True)
    assert got == {"backend": 1, "Ps": 1, "system": 1}, str(got)


def test_the_count_sees_a_second_validation(counts):
    # negative control: a public door called once more during the verdict validates again, and the count rises
    entry = sp_ode.get_system("me3")
    sp_ode.verify(entry, smoke=True)
    sp_ode.slow_manifold(entry, 1)
    got = _per_input(counts)
    assert got["order"] == 2 and got["system"] == 2, str(got)


def test_the_network_door_still_validates_its_eps(monkeypatch):
    # the public verify_network validates each ε it is given (4 here, one too few): what verify does not repeat
    from sp_ode.verification.network import verify_network

    model = sp_ode.get_network_model("birth_death", N=40)
    system = sp_ode.systems.resolve.as_system(model)
    seen: collections.Counter = collections.Counter()
    real = validation.check_positive

    def counting(name, value, *a, **k):
        seen[name] += 1
        return real(name, value, *a, **k)

    monkeypatch.setattr(network, "check_positive", counting)
    with pytest.raises(ValueError, match="at least 5 values"):
        verify_network(system, model.t_span, [0.5], eps_values=[0.1, 0.01, 0.001, 1e-4])
    assert seen["eps"] == 4


def test_verify_refuses_a_bad_t_span_and_phi_at_its_door(monkeypatch):
    # validated once, before any work: the region step is never reached
    import sp_ode.verification.report as report

    monkeypatch.setattr(report, "visited_region_checked", lambda *a, **k: pytest.fail("work started"))
    e = sp_ode.get_system("toy")
    with pytest.raises(ValueError, match="t_span"):
        sp_ode.verify(e.system, t_span=(1.0, 0.0), x0=e.x0, y0=e.y0, smoke=True)
    with pytest.raises(TypeError, match="`phi` must be callable"):
        sp_ode.verify(e, phi=3.0, smoke=True)
