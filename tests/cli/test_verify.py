"""`sp-ode verify` end to end (in-process `main`, so compiled solves are shared): verdicts, exit codes, figures."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sp_ode.cli import UsageError, main
from sp_ode.cli.verify import parse_overrides, resolve_system
from sp_ode.verification.report import format_report

STATUS = ("ok", "FAIL", "skipped")


def _check_lines(text: str) -> list[str]:
    """The summary lines of the human report: numbered steps and the final verdict."""
    return [ln for ln in text.splitlines() if ln.startswith(("(1)", "(2) identity:", "(3) certificate:"))]


def test_verify_smoke_json_me3(tmp_path, capsys):
    rc = main(["verify", "--smoke", "--json", "--out", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["passed"] is True and out["failure"] is None
    assert out["checks"] == {"hyperbolicity": "ok", "identity": "ok", "certificate": "ok"}
    # the identity is certified by methods of different kinds, each named
    kinds = {m["kind"] for m in out["identity_methods"]}
    assert {"linear solve", "attractor", "exact arithmetic"} <= kinds
    assert out["identity_checked"] and out["identity_max_error"] <= out["identity_tolerance"] <= 1e-10
    for key, want in (("slope_manifold", 1), ("slope_corrected", 2), ("slope_slow", 1)):
        assert abs(out[key] - want) <= 0.15, (key, out[key])
    for name in ("report.json", "manifold.png", "convergence.png"):
        assert (tmp_path / name).stat().st_size > 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["certificate"]["Ps"] == [16, 32, 64, 128, 256, 512]
    assert all(f["n_points"] >= 4 for f in report["certificate"]["fits"].values())
    kind = {m["name"]: m["kind"] for m in report["identity_methods"]}
    same = [c for c in report["identity_comparisons"] if not c["independent"]]
    # LU vs GTH (and the catalogue's φ, itself a bordered solve): reported, never counted
    assert same and all(kind[c["a"]] == kind[c["b"]] == "linear solve" for c in same)
    assert any("GTH" in c["a"] + c["b"] and "Newton" in c["a"] + c["b"] for c in same)
    text = format_report(report)
    lines = _check_lines(text)
    assert len(lines) == 3 and all(ln.rstrip().endswith(STATUS) for ln in lines)
    assert text.splitlines()[-1] == "verify PASSED: hyperbolicity ok, identity ok, certificate ok"


def test_fold_reached_stops_at_once(tmp_path, capsys):
    # FitzHugh–Nagumo, I = 0.5: the fold at w = −2/3 + I = −1/6 is on the reduced path (closed form)
    stale = tmp_path / "convergence.png"
    stale.write_bytes(b"old")
    rc = main(["verify", "--system", "fitzhugh_nagumo", "--set", "I=0.5", "--out", str(tmp_path)])
    cap = capsys.readouterr()
    assert rc == 1
    first = cap.out.splitlines()[0]
    assert first.startswith("normal hyperbolicity: the critical manifold loses normal hyperbolicity (fold) at "
                            "w* = -0.166667, reached at t ≈ 4.6")   # the catalogue names y `w`
    assert first.endswith("the reduction does not hold past it")
    assert cap.err.startswith("sp-ode verify: normal hyperbolicity:")
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["checks"] == {"hyperbolicity": "FAIL", "identity": "skipped", "certificate": "skipped"}
    assert report["certificate"] is None                    # no certificate ran
    assert abs(report["loss_of_hyperbolicity"]["y"][0] + 1 / 6) <= 1e-10
    assert not stale.exists() and (tmp_path / "manifold.png").stat().st_size > 0
    assert all(ln.rstrip().endswith(STATUS) for ln in _check_lines(cap.out))


@pytest.mark.slow
def test_fitzhugh_nagumo_fold_outside_passes(tmp_path, capsys):
    # I = 0: the fold w = −2/3 lies below the visited range [w* ≈ −0.624, 0]: a note, and verify passes
    rc = main(["verify", "--system", "fitzhugh_nagumo", "--smoke", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "note: fold at w = -0.666667, outside the visited range" in out
    assert out.splitlines()[-2] == "verify PASSED: hyperbolicity ok, identity ok, certificate ok"


def test_failed_check_exits_1_and_names_it(tmp_path, capsys, monkeypatch):
    # a certificate that fails (tolerance impossible to meet) → exit 1; the first line names the rate
    import sp_ode.verification.report as certificate  # where verify looks the certificate up

    real = certificate.convergence_certificate_checked
    monkeypatch.setattr(certificate, "convergence_certificate_checked",
                        lambda *a, **k: real(*a, **{**k, "slope_tol": 1e-9}))
    # (after the test above: the same system, so its compiled solves are reused)
    rc = main(["verify", "--system", "fitzhugh_nagumo", "--smoke", "--out", str(tmp_path)])
    cap = capsys.readouterr()
    assert rc == 1
    assert cap.out.splitlines()[0].startswith("certificate: ") and " rate (" in cap.out.splitlines()[0]
    assert cap.err.startswith("sp-ode verify: certificate: ")


def test_runtime_error_exits_3(tmp_path, capsys):
    # a ValueError raised inside numpy while building the user's system is a runtime failure, not usage
    path = tmp_path / "broken.py"
    path.write_text("import numpy as np\n"
                    "def factory():\n    return np.linalg.inv(np.zeros((2, 2)))\n")
    assert main(["verify", "--system", f"{path}:factory", "--out", str(tmp_path)]) == 3
    assert "Singular matrix" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["verify", "--system", "no_such_system"],
    ["verify", "--system", "missing/file.py:OBJ"],
    ["verify", "--system", "tests/cli/test_verify.py:NOPE"],
    ["verify", "--order", "-1"],
    ["verify", "--order", "1.5"],
    ["verify", "--Ps", "4", "0", "16", "32"],
    ["verify", "--Ps", "4", "8", "16"],
    ["verify", "--backend", "jax"],
    ["verify", "--system", "fitzhugh_nagumo", "--set", "J=1"],
    ["verify", "--system", "fitzhugh_nagumo", "--set", "I"],
])
def test_usage_errors_exit_2(argv, tmp_path, capsys):
    assert main(argv + ["--out", str(tmp_path)]) == 2
    assert "error" in capsys.readouterr().err


def test_parse_overrides():
    assert parse_overrides(["I=0.5", "v0=-1"]) == {"I": 0.5, "v0": -1.0}
    with pytest.raises(UsageError, match="KEY=VALUE"):
        parse_overrides(["I"])


def test_resolve_user_file(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(
        "from sp_ode.systems import get_system\n"
        "ENTRY = get_system('toy', eps=0.1)\n"
        "BARE = ENTRY.system\n"
        "def factory():\n    return get_system('michaelis_menten')\n"
        "NOT_A_SYSTEM = 3\n")
    case = resolve_system(f"{path}:ENTRY")
    assert case.name == "toy" and case.t_span == (0.0, 2.0) and case.phi is not None
    assert resolve_system(f"{path}:factory").name == "michaelis_menten"
    with pytest.raises(UsageError, match="--t-span"):
        resolve_system(f"{path}:BARE")
    bare = resolve_system(f"{path}:BARE", t_span=(0, 1), x0=[0.0], y0=[1.0])
    np.testing.assert_array_equal(bare.y0, [1.0])
    with pytest.raises(TypeError, match="FastSlowSystem"):
        resolve_system(f"{path}:NOT_A_SYSTEM")
    assert float(np.asarray(resolve_system("fitzhugh_nagumo", overrides={"I": 0.5}).system.args["I"])) == 0.5


def test_an_earlier_report_is_never_replaced_silently(tmp_path, capsys):
    # a smoke run into a folder that holds a report must not replace it (exit 2, before any work)
    earlier = tmp_path / "report.json"
    earlier.write_text('{"system": "mine", "passed": true}')
    assert main(["verify", "--smoke", "--out", str(tmp_path)]) == 2
    assert "already holds a verify report" in capsys.readouterr().err
    assert earlier.read_text() == '{"system": "mine", "passed": true}'
    # the library refuses the same way
    import sp_ode

    with pytest.raises(FileExistsError, match="overwrite=True"):
        sp_ode.verify(sp_ode.get_system("me3"), smoke=True, out=tmp_path)
    assert main(["verify", "--smoke", "--overwrite", "--out", str(tmp_path)]) == 0
    assert json.loads(earlier.read_text())["system"] == "me3"


def test_a_grid_too_large_for_memory_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    import sp_ode.verification.report as report

    monkeypatch.setattr(report, "visited_region_checked", lambda *a, **k: pytest.fail("work started before the check"))
    assert main(["verify", "--num", "1000000000000", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sp-ode verify: error: the identity check on 1000000000000 grid points") and "\n" not in err
    assert "needs an estimated" in err and "--num" in err


@pytest.mark.slow
def test_fitzhugh_nagumo_passes_down_to_p_4096(tmp_path, capsys):
    # The full solve at P = 4096 (ε = 2.4e-4) ran out of its 50 000 steps at t = 15.8 on the old default route
    # and failed the whole certificate; now every point is solved and the rates are measured
    rc = main(["verify", "--system", "fitzhugh_nagumo", "--Ps", "512", "1024", "2048", "4096", "--num", "9",
               "--json", "--out", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["passed"], out["failure"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert all(s["status"] == 0 for s in report["certificate"]["solver_stats"])
    assert 4096 in report["certificate"]["Ps"]


def test_negative_num_is_a_usage_error(tmp_path, capsys):
    # issue 25 item 11: `sp-ode verify --num -1` exited 0 (checked fixed, kept fixed)
    assert main(["verify", "--num", "-1", "--out", str(tmp_path / "v")]) == 2
    assert "`--num` must be >= 2; got -1" in capsys.readouterr().err
    # `--num 0` under --smoke: the smoke grid used to replace it silently
    assert main(["verify", "--smoke", "--num", "0", "--out", str(tmp_path / "v")]) == 2
    assert "`--num` must be >= 2; got 0" in capsys.readouterr().err and not (tmp_path / "v").exists()


def test_set_applies_to_a_users_file(tmp_path):
    # `--set` was refused for user model files; it sets a system's dict args, eps or P, or a factory's keywords
    from sp_ode.cli.common import UsageError
    from sp_ode.cli.verify import system_object

    path = tmp_path / "model.py"
    path.write_text("import sp_ode\n"
                    "def f(t, x, y, args):\n    return -x + args['a'] * y**2\n"
                    "def g(t, x, y, args):\n    return -x\n"
                    "system = sp_ode.FastSlowSystem(f, g, eps=1e-2, args={'a': 1.0}, m=1, d=1)\n"
                    "def factory(a=1.0):\n    return sp_ode.FastSlowSystem(f, g, eps=1e-2, args={'a': a}, m=1, d=1)\n")
    obj, _ = system_object(f"{path}:system", overrides={"a": 2.0, "eps": 1e-3})
    assert obj.args == {"a": 2.0} and obj.eps == 1e-3
    obj, _ = system_object(f"{path}:factory", overrides={"a": 3.0})
    assert obj.args == {"a": 3.0}
    with pytest.raises(UsageError, match=r"`--set aa`: not a parameter .* \(did you mean 'a'\?\)"):
        system_object(f"{path}:system", overrides={"aa": 1.0})
    with pytest.raises(UsageError, match=r"`--set b`: .*takes \('a',\)"):
        system_object(f"{path}:factory", overrides={"b": 1.0})
