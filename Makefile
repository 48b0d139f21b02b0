# The two commands of the README. Each bootstraps a local virtualenv (.venv) on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
ARGS   ?=

.PHONY: lab demo test lint bench notebooks clean

$(STAMP): pyproject.toml
	@echo "make: first run: creating $(VENV) and installing wm-kernel with JupyterLab and the test tools;"
	@echo "      pip prints a line per package (see the README for how long this takes)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check --progress-bar off -e '.[test]' 2>&1 \
		| grep --line-buffered -v "is ignored: it is neither" || true
	$(PY) -c "import wm_kernel, trinkets, IPython, ipywidgets, nbval, tiktoken, playwright"
	touch $(STAMP)

## lab: open the example notebooks in JupyterLab with the extension and kernel ready
# JupyterLab refuses to start as root unless told; containers and CI machines often run as root
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

# the shipped notebooks are ours: trust them so their saved HTML views keep the theme's colours
lab: $(STAMP)
	$(PY) -m jupyter trust notebooks/*.ipynb >/dev/null
	$(PY) -m jupyter lab --notebook-dir=notebooks $(ROOT_FLAG) $(ARGS)

## demo: the headless demo in the terminal
demo: $(STAMP)
	$(PY) -m wm_kernel demo $(ARGS)

## test: unit tests, doctests and the nbval-checked notebooks
test: $(STAMP)
	@echo "make test: running pytest (unit tests, doctests, the notebooks, the browser tests): a dot per test, then the summary"
	@$(PY) -m pytest -q $(ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; \
	exit $$status

## lint: ruff format --check, ruff (lint rules) and mypy --strict, the checks the pre-commit config runs; CI runs it first
lint: $(STAMP)
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	$(PY) -m mypy

## notebooks: re-execute the shipped notebooks in place, saving outputs and widget state
notebooks: $(STAMP)
	$(PY) tools/execute_notebooks.py

## bench: the benchmarks (ratios against a floor measured in the same run; a few minutes)
bench: $(STAMP)
	$(PY) bench/compose.py
	$(PY) bench/replay.py
	$(PY) bench/sweep.py
	$(PY) bench/dashboard.py
	$(PY) bench/linear.py

clean:
	rm -rf $(VENV)
