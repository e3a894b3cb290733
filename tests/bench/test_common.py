"""bench._common: where records go by default (never over an existing one), and the fresh-process command."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench import _common


def test_records_go_under_results_by_topic_and_never_overwrite(tmp_path, monkeypatch):
    monkeypatch.setattr(_common, "RESULTS", tmp_path)
    assert _common.default_record(None, "bench.markov.stationary", smoke=True) is None   # the tests' smoke runs
    assert _common.default_record("x/y.json", "bench.markov.stationary", smoke=True) == Path("x/y.json")
    first = _common.default_record(None, "bench.markov.stationary", smoke=False)
    assert first == tmp_path / "markov" / "stationary.json"
    first.parent.mkdir()
    first.write_text("{}")
    assert _common.default_record(None, "bench.markov.stationary", smoke=False) == tmp_path / "markov" / "stationary_2.json"
    (tmp_path / "markov" / "stationary_2.json").write_text("{}")
    assert _common.fresh_path(first) == tmp_path / "markov" / "stationary_3.json"
    with pytest.raises(ValueError, match=r"`module` must be bench.<topic>.<name>; got 'stationary'"):
        _common.default_record(None, "stationary", smoke=False)


def test_a_child_runs_this_checkout_from_anywhere(tmp_path):
    """module_command + child_env run a bench module from another folder (the root first on PYTHONPATH)."""
    code = "import bench, sp_ode; print(bench.__file__); print(sp_ode.__file__)"
    out = subprocess.run(_common.module_command("bench.render", "--check")[:1] + ["-c", code], capture_output=True,
                         text=True, cwd=tmp_path, env=_common.child_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    bench_file, sp_ode_file = out.stdout.split()
    assert Path(bench_file).parent.parent == _common.ROOT and Path(sp_ode_file).parent.parent == _common.ROOT
    assert _common.module_command("bench.x.y", "--n", 3)[1:] == ["-m", "bench.x.y", "--n", "3"]
