"""The `sp-ode` dispatcher: --version, "did you mean" for commands and subcommand flags, exit codes."""
from __future__ import annotations

import numpy as np

from sp_ode import __version__
from sp_ode.cli import EXIT_RUNTIME, EXIT_USAGE, main


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"sp-ode {__version__}"


def test_mistyped_command_suggests_the_close_one(capsys):
    assert main(["verfy"]) == EXIT_USAGE
    assert "did you mean 'verify'?" in capsys.readouterr().err


def test_mistyped_flag_of_a_subcommand_uses_its_usage_and_suggests(tmp_path, capsys):
    np.save(tmp_path / "Q.npy", np.array([[-1.0, 1.0], [2.0, -2.0]]))
    assert main(["stationary", str(tmp_path / "Q.npy"), "--tol1", "1e-8"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "usage: sp-ode stationary" in err and "did you mean --tol?" in err
    # a flag with no close match gets no invented suggestion
    assert main(["stationary", str(tmp_path / "Q.npy"), "--zzzz"]) == EXIT_USAGE
    assert "did you mean" not in capsys.readouterr().err


def test_runtime_failure_is_exit_3_with_one_line(tmp_path, capsys):
    # a model file that raises inside a dependency at run time is a runtime error, not usage
    model = tmp_path / "bad.py"
    model.write_text("import numpy as np\nQ = np.linalg.inv(np.zeros((2, 2)))\n")
    code = main(["verify", "--system", f"{model}:Q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code in (EXIT_USAGE, EXIT_RUNTIME)  # the loader reports the user's file (one line either way)
    assert len(err) == 1 and err[0].startswith("sp-ode verify: error:") and "bad.py" in err[0]
