# Two commands for a newcomer: `make demo` and `make test`.
# Both create .venv on first use (torch pinned to the local 2.13.0 CPU wheel
# *before* the project, so pip never pulls a CUDA build) and are no-ops after.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint bench clean

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

clean:
	rm -rf $(VENV) out build *.egg-info
