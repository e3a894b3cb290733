from sp_ode.cli import program

raise SystemExit(program())
