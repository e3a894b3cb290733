# Two commands for a newcomer: `make demo` and `make test`.
# Both create .venv on first use (torch pinned to the local 2.13.0 CPU wheel
# *before* the project, so pip never pulls a CUDA build) and are no-ops after.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-slow test-all lint bench clean docs docs-smoke docstrings

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	# torchtt (the TT route of the CME) compiles against that torch: without build isolation, or pip
	# would fetch a CUDA torch to build it in
	$(PY) -m pip install --quiet --no-build-isolation torchtt==0.5.0
	$(PY) -m pip install --quiet -e '.[test,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/sp-ode demo

# One BLAS/OpenMP thread per pytest worker: two workers fill the two cores, and
# oversubscribed OpenMP threads were measured 7-26x slower on a shared machine.
# --dist loadgroup: the docs site is built once, on one worker (tests/docs/test_site.py).
# Two tiers, both run by CI (.ci/run): `make test` (within five minutes of suite time on two cores, issue 37)
# and `make test-slow`, the tests marked `slow`: the breadth (every catalogue
# system and Test Set problem on both backends, a network sweep's larger cases), the heavier gallery examples and
# bench smokes, runs on a live Dask cluster, whole CLI verdicts, the headless-browser page views, a verdict at
# full size.  `make test-all` runs both.
PYTEST := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --dist loadgroup

test: $(STAMP) lint
	$(PYTEST) -m "not slow" tests

test-slow: $(STAMP)
	$(PYTEST) -m slow tests

test-all: $(STAMP) lint
	$(PYTEST) tests

# The benchmarks live in bench/ (one sub-package per topic, each script `python -m bench.<topic>.<name>`,
# every one with --smoke, run by tests/bench) and write their records under results/<topic>/.
# `make bench` regenerates the documentation's tables of records from results/ (bench.render);
# tests/bench/test_render.py fails when a committed page differs from what its records give.
bench: $(STAMP)
	$(PY) -m bench.render

# Lint rules (ruff), the one-way import contracts (import-linter) and the type checker (mypy: the
# annotated public API and the stubs; about 30 s from a cold .mypy_cache, under 1 s warm), all in pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

# The documentation site (build/site): mkdocs build --strict, so a warning fails it, with
# every gallery example (examples/) executed; docs-smoke runs the gallery at smoke size.
# Then tools/check_site.py reads the built pages for what a strict build lets through (broken
# tables, raw LaTeX, Sphinx markup, pages outside the menu, assets from other hosts).
# The docs extra is part of `make setup` (the suite builds the site, tests/docs/).
DOCS_ENV := NO_MKDOCS_2_WARNING=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

docs: $(STAMP)
	rm -rf docs/generated  # no gallery output reused from an earlier (smoke) build
	$(DOCS_ENV) $(VENV)/bin/mkdocs build --strict
	$(PY) tools/check_site.py build/site

docs-smoke: $(STAMP)
	rm -rf docs/generated
	SP_ODE_GALLERY=smoke $(DOCS_ENV) $(VENV)/bin/mkdocs build --strict
	$(PY) tools/check_site.py build/site

# Docstrings in the one style mkdocstrings renders (numpydoc sections, Markdown references):
# rerun after a merge brings in modules written in another style; tests/docs/test_docstrings.py checks.
docstrings: $(STAMP)
	$(PY) tools/convert_docstrings.py sp_ode neural

clean:
	rm -rf $(VENV) out build *.egg-info docs/generated .mypy_cache
