"""`sp-ode fit-phi` through `sp_ode.cli.main`: the --smoke --json record, files, and usage errors."""
from __future__ import annotations

import json

import pytest

from sp_ode.cli import main

# One worker runs this module (make test: --dist loadgroup), so its module fixture is built once, not per worker.
pytestmark = pytest.mark.xdist_group("test_fit_phi")

USER_Q = '''
import numpy as np

def Q(y):
    """2-state switch a = e^{y0}, b = 1 + y1^2 (irreducible everywhere)."""
    a, b = np.exp(y[0]), 1.0 + y[1] ** 2
    return np.array([[-a, a], [b, -b]])

def Q_reducible_right(y):
    a = np.exp(y[0])
    return np.array([[-a, a], [0.0, 0.0]]) if y[0] > 0.5 else np.array([[-a, a], [1.0, -1.0]])
'''


def test_smoke_json_record_and_files(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["fit-phi", "--smoke", "--json", "--out", str(out)]) == 0
    record = json.loads(capsys.readouterr().out)
    for key in ["max_abs_error", "max_certificate", "certificate_holds", "loss", "max_tv", "max_kl"]:
        assert key in record
    assert record["certificate_holds"] is True
    assert record["system"] == "cycle3" and record["loss_name"] == "kl"
    # the certificate bounds the 2-norm error, hence the max abs error (‖·‖∞ ≤ ‖·‖₂)
    assert record["max_abs_error"] <= record["max_certificate"]
    assert 0 < record["max_abs_error"] < 0.37  # below the uniform start's error
    assert record["extrapolation"]["n_points"] > 0 and record["extrapolation"]["extrapolation"] is True
    assert json.loads((out / "report.json").read_text())["max_abs_error"] == record["max_abs_error"]
    for name in ["training.png", "phi_components.png", "error_certificate.png"]:
        assert (out / name).stat().st_size > 1000


def test_user_function_two_dimensional_residual_table(tmp_path, capsys):
    f = tmp_path / "my_q.py"
    f.write_text(USER_Q)
    code = main(["fit-phi", "--smoke", "--system", f"{f}:Q", "--domain", "-1", "1", "0", "1",
                 "--loss", "residual", "--steps", "10", "--out", str(tmp_path / "o")])
    assert code == 0
    text = capsys.readouterr().out
    assert "n = 2, d = 2" in text and "certificate holds" in text and "NO" not in text


@pytest.mark.parametrize("argv, match", [
    (["--loss", "mse"], "`--loss` must be one of"),
    (["--system", "nosuch"], "`system` must be one of"),
    (["--system", "{f}:Q"], "`domain` is required"),
    (["--system", "{f}:Q", "--domain", "-1", "1", "0"], "LO HI pairs"),
    (["--system", "{f}:Q_reducible_right", "--domain", "-1", "1"], r"y = \[0\.5\d+\].*irreducible"),
    (["--device", "cuda"], "`--device` must be 'cpu'"),
    (["--width", "0"], "`width` must be a positive integer"),
])
def test_usage_errors_exit_2(tmp_path, capsys, argv, match):
    import re

    f = tmp_path / "my_q.py"
    f.write_text(USER_Q)
    argv = [a.replace("{f}", str(f)) for a in argv]
    assert main(["fit-phi", "--smoke", "--steps", "1", "--out", str(tmp_path / "o"), *argv]) == 2
    assert re.search(match, capsys.readouterr().err)


# --- the fitted φ_θ is kept and reused (issue 13) -----------------------------------------

@pytest.fixture(scope="module")
def small_fit():
    from neural.phi.fit import fit_phi

    return fit_phi("cycle3", loss="kl", width=8, depth=1, steps=15, n_train=32, monitor=False)


def test_save_load_roundtrip_is_bitwise(small_fit, tmp_path):
    import numpy as np

    import neural

    folder = neural.save_phi(small_fit.model, tmp_path / "phi", metadata={"system": "cycle3"})
    loaded = neural.load_phi(folder)
    ys = np.linspace(-2.0, 2.0, 17)
    np.testing.assert_array_equal(loaded.predict(ys), small_fit.model.predict(ys))
    assert json.loads((folder / "phi.json").read_text())["metadata"]["system"] == "cycle3"
    np.testing.assert_array_equal(neural.load_phi(folder / "phi.json").predict(ys), loaded.predict(ys))


@pytest.mark.parametrize("activation", ["tanh", "silu", "gelu"])
def test_jax_function_matches_torch_to_1e12(activation, x64):
    import jax
    import numpy as np
    import torch

    from neural.phi.fit import PhiMLP

    model = PhiMLP(2, 4, width=8, depth=2, lower=[-1, 0], upper=[1, 3], activation=activation, seed=3)
    with torch.no_grad():  # a non-uniform output layer, so the softmax is not trivially 1/n
        model.out.weight.normal_(generator=torch.Generator().manual_seed(1))
    ys = np.random.default_rng(0).uniform([-1, 0], [1, 3], size=(50, 2))
    ref = model.predict(ys)  # torch, float64
    phi = model.jax_fn()
    got = np.asarray(jax.vmap(phi)(ys))
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(phi(ys[0])), ref[0], rtol=0, atol=1e-12)


def test_fitted_phi_drives_simulate_reduced(small_fit):
    """φ_θ as phi= of simulate_reduced on me3 (cycle3), against the exact p_st(y) reduced flow.

    Tolerance: |y_θ(t) − y(t)| ≤ L_x e^{L_y T} T · max|φ_θ − p_st| (Gronwall); for me3 on
    T = 1 we allow 10 × max|φ_θ − p_st| over the domain, the fit's own measured error.
    """
    import numpy as np

    import sp_ode

    entry = sp_ode.get_system("me3")
    ts = np.linspace(0.0, 1.0, 11)
    # scipy Radau: no diffrax compile (seconds instead of ~20 s on one core)
    exact = sp_ode.simulate_reduced(entry.system, (0.0, 1.0), entry.y0, ts=ts, backend="scipy")
    approx = sp_ode.simulate_reduced(entry.system, (0.0, 1.0), entry.y0, phi=small_fit.model.jax_fn(), ts=ts,
                                     backend="scipy")
    err = small_fit.evaluate().summary()["max_abs_error"]
    assert np.all(np.isfinite(approx.y))
    assert np.max(np.abs(approx.y - exact.y)) <= 10 * err


def test_load_errors_name_file_and_rule(small_fit, tmp_path):
    import torch
    from safetensors.torch import save_file

    import neural

    folder = neural.save_phi(small_fit.model, tmp_path / "phi")
    state = {k: v.clone() for k, v in small_fit.model.state_dict().items()}
    state["out.weight"] = torch.zeros(2, 2, dtype=torch.float64)
    save_file(state, str(folder / "phi.safetensors"))
    with pytest.raises(neural.PhiFileError, match=r"phi.safetensors: tensor 'out.weight' must have shape \(3, 8\)"):
        neural.load_phi(folder)
    (folder / "phi.safetensors").write_bytes(b"garbage")
    with pytest.raises(neural.PhiFileError, match=r"phi.safetensors: not a safetensors file"):
        neural.load_phi(folder)
    (folder / "phi.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(neural.PhiFileError, match=r"phi.json: field `format` must be 'sp-ode-phi/1'"):
        neural.load_phi(folder)
    with pytest.raises(neural.PhiFileError, match=r"missing"):
        neural.load_phi(tmp_path / "nowhere")


def test_fit_phi_writes_phi_and_svg_figures(tmp_path, capsys):
    import numpy as np

    import neural

    out = tmp_path / "run"
    assert main(["fit-phi", "--smoke", "--steps", "5", "--format", "svg", "--dpi", "80", "--json",
                 "--out", str(out)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["phi"] == str(out / "phi")
    for name in ["training.svg", "phi_components.svg", "error_certificate.svg"]:
        assert (out / name).read_text().lstrip().startswith("<?xml")
    model = neural.load_phi(out / "phi")
    assert model.predict(np.array([0.0, 1.0])).shape == (2, 3)  # d = 1: a vector is N points


def test_fit_phi_out_is_a_file_and_bad_format(tmp_path, capsys):
    target = tmp_path / "file.txt"
    target.write_text("x")
    assert main(["fit-phi", "--smoke", "--out", str(target)]) == 2
    assert "is a file" in capsys.readouterr().err
    assert main(["fit-phi", "--smoke", "--format", "jpg", "--out", str(tmp_path / "o")]) == 2
    assert "`--format` must be one of" in capsys.readouterr().err


def test_existing_fit_is_refused_before_any_work(tmp_path, capsys):
    # issue 25 item 7: a second fit-phi replaced the first one without a word
    out = tmp_path / "run"
    (out / "phi").mkdir(parents=True)
    (out / "report.json").write_text('{"first": true}')
    assert main(["fit-phi", "--smoke", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "--overwrite" in err and "lbfgs steps" not in err   # no fit started
    assert (out / "report.json").read_text() == '{"first": true}'


def test_float32_generator_function_is_accepted_and_its_rounding_reported(tmp_path, capsys):
    # a jnp Q(y) run outside float64 mode returns float32: refused before ("rows must sum to zero")
    f = tmp_path / "q32.py"
    f.write_text(
        "import jax.numpy as jnp\n"
        "K = jnp.array([0.7, 1.3, 0.45, 2.2])\n"
        "def Q(y):\n"
        "    a = K[0] * jnp.exp(y[0]); b = K[1]; c = K[2] * jnp.exp(-y[0]); d = K[3]\n"
        "    R = jnp.array([[0.0, a, 0.0, 0.3], [b, 0.0, c, 0.0], [0.0, d, 0.0, a], [0.1, 0.0, b, 0.0]])\n"
        "    return R - jnp.diag(R.sum(axis=1))\n")
    out = tmp_path / "o"
    assert main(["fit-phi", "--smoke", "--steps", "5", "--system", f"{f}:Q", "--domain", "-1", "1",
                 "--out", str(out)]) in (0, 1)
    record = json.loads((out / "report.json").read_text())
    assert record["input_rounding"] == pytest.approx(((1 + 2**-24) / (1 - 2**-24)) ** 3 - 1, rel=1e-9)
    assert "reduced-precision rates" in capsys.readouterr().err
