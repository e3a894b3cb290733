# Two commands for a newcomer: `make demo` and `make test`.
# Both create .venv on first use (torch pinned to the local 2.13.0 CPU wheel
# *before* the project, so pip never pulls a CUDA build) and are no-ops after.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint bench clean docs docs-smoke

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/sp-ode demo

# One BLAS/OpenMP thread per pytest worker: two workers fill the two cores, and
# oversubscribed OpenMP threads were measured 7-26x slower on a shared machine.
test: $(STAMP) lint
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(PY) -m pytest -q -n 2 tests

# Lint rules (ruff) and the one-way import contracts (import-linter), both in pyproject.toml.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# The documentation site (build/site): mkdocs build --strict, so a warning fails it, with
# every gallery example (examples/) executed; docs-smoke runs the gallery at smoke size.
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): pyproject.toml $(STAMP)
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	rm -rf docs/generated  # no gallery output reused from an earlier (smoke) build
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(VENV)/bin/mkdocs build --strict

docs-smoke: $(DOCS_STAMP)
	rm -rf docs/generated
	SP_ODE_GALLERY=smoke OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) out build *.egg-info docs/generated
