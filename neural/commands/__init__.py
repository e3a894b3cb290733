"""The `sp-ode` subcommands that need torch: `train` (`sp-ode train`) and `fit_phi` (`sp-ode fit-phi`).

They reach the `sp-ode` command line through the `sp_ode.commands` entry
points declared in `pyproject.toml`: sp_ode never imports neural.  Each
module exposes `HELP`, `add_arguments(parser)` and `run(args) -> int`.
"""
