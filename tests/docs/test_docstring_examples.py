"""The `Examples` sections of the reaction-network docstrings run and print what they show (doctest).

Each expected output has its provenance in the example's comment (a closed form, or GillesPy2's
convention computed by hand; `transient_distribution`: the Poisson law of immigration–death).  The `sweep` example takes seconds of compilation, which
tests/sweeps covers at the same size: here it is only parsed, as the API pages' sweeps example is.
"""
from __future__ import annotations

import doctest
import importlib
import io

import pytest

RUN = {"ReactionNetwork": "sp_ode.networks.network", "from_sbml": "sp_ode.networks.sbml",
       "transient_distribution": "sp_ode.networks.cme.transient"}
PARSED = {"sweep": "sp_ode.sweeps.sweep"}


def _examples(module, name):
    module = importlib.import_module(module)     # the module itself (`sp_ode.sweeps.sweep` the function shadows it)
    obj = getattr(module, name)
    tests = doctest.DocTestFinder(recurse=False).find(obj, name, module=module, globs={})
    assert tests and tests[0].examples, f"{module.__name__}.{name} has no Examples section"
    return tests[0]


def _run(test) -> None:
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(test, out=out.write)
    assert runner.failures == 0, out.getvalue()


@pytest.mark.parametrize("name", sorted(RUN))
def test_docstring_example_runs(name):
    if name == "from_sbml":
        pytest.importorskip("antimony")
    _run(_examples(RUN[name], name))


@pytest.mark.filterwarnings("ignore:visit_Num is deprecated:DeprecationWarning")
def test_from_gillespy2_example_runs():
    pytest.importorskip("gillespy2")
    _run(_examples("sp_ode.networks.gillespy2", "from_gillespy2"))


@pytest.mark.parametrize("name", sorted(PARSED))
def test_docstring_example_parses(name):
    for example in _examples(PARSED[name], name).examples:
        compile(example.source, f"<{name} example>", "exec")


def test_a_wrong_expected_output_fails():
    # negative control: the runner does compare outputs
    test = doctest.DocTestParser().get_doctest(">>> 1 + 1\n3\n", {}, "wrong", None, 0)
    with pytest.raises(AssertionError, match="Expected:"):
        _run(test)
