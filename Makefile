# The two commands of the README. Each bootstraps a local virtualenv (.venv) on first use, at the
# versions the suite last passed with (constraints.txt; `make constraints` records them).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
CONSTRAINTS := constraints.txt
# test-latest's own virtualenv: the newest releases pyproject.toml allows, never constrained
LATEST ?= .venv-latest
ARGS   ?=

PIP_INSTALL := -m pip install --disable-pip-version-check --progress-bar off
# pip's own lines pass through, less a noisy warning; pip goes quiet while it unpacks everything
# it downloaded (a minute or more for JupyterLab's ~165 packages), so a line says so first. The
# shell's `read` takes one line at a time; awk did not (Debian's mawk reads a pipe in blocks, so
# pip's lines and this one came minutes late, all at once)
PIP_OUTPUT := while IFS= read -r line; do \
	case "$$line" in *"is ignored: it is neither"*) continue ;; \
	"Installing collected packages"*) echo "make: pip is unpacking the downloaded packages now;" \
		"nothing prints until \"Successfully installed\" (a minute or more)" ;; esac; \
	printf '%s\n' "$$line"; done

.PHONY: lab demo test test-latest constraints lint bench notebooks clean

$(STAMP): pyproject.toml $(CONSTRAINTS)
	@echo "make: installing wm-kernel with JupyterLab and the test tools into $(VENV), at the versions in $(CONSTRAINTS);"
	@echo "      pip prints a line per package (see the README for how long a first run takes)"
	@[ -x $(PY) ] || { echo "make: creating $(VENV) (a few seconds)"; $(PYTHON) -m venv $(VENV); }
	$(PY) $(PIP_INSTALL) -c $(CONSTRAINTS) -e '.[test]' 2>&1 | $(PIP_OUTPUT)
	$(PY) -c "import wm_kernel, trinkets, IPython, ipywidgets, anywidget, marimo, nbval, tiktoken, playwright"
	$(PY) tools/lab_settings.py
	touch $(STAMP)

## lab: open the example notebooks in JupyterLab with the extension and kernel ready
# JupyterLab refuses to start as root unless told; containers and CI machines often run as root
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

# the shipped notebooks are ours: trust them so their saved HTML views keep the theme's colours
lab: $(STAMP)
	@$(PY) tools/lab_settings.py
	$(PY) -m jupyter trust notebooks/*.ipynb >/dev/null
	$(PY) -m jupyter lab --notebook-dir=notebooks $(ROOT_FLAG) $(ARGS)

## demo: the headless demo in the terminal
demo: $(STAMP)
	$(PY) -m wm_kernel demo $(ARGS)

## test: unit tests, doctests and the nbval-checked notebooks
test: $(STAMP)
	@echo "make test: running pytest (unit tests, doctests, the notebooks, the browser tests): a dot per test, each file of slow tests named as it starts, a line while one runs long, then the summary"
	@$(PY) -m pytest -p tests.starting -q $(ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; \
	exit $$status

## test-latest: the suite against the newest releases pyproject.toml allows, in $(LATEST) (drift found by us, not a newcomer)
test-latest:
	@echo "make test-latest: installing the newest releases pyproject.toml allows into $(LATEST) (no constraints);"
	@echo "      pip prints a line per package"
	@[ -x $(LATEST)/bin/python ] || { echo "make: creating $(LATEST) (a few seconds)"; $(PYTHON) -m venv $(LATEST); }
	$(LATEST)/bin/python $(PIP_INSTALL) --upgrade --upgrade-strategy eager -e '.[test]' 2>&1 | $(PIP_OUTPUT)
	$(LATEST)/bin/python -c "import wm_kernel, trinkets, IPython, ipywidgets, anywidget, marimo, nbval, tiktoken, playwright"
	@$(LATEST)/bin/python tools/constraints.py compare $(CONSTRAINTS)
	@echo "make test-latest: running pytest on those versions: a dot per test, then the summary"
	@$(LATEST)/bin/python -m pytest -q $(ARGS); status=$$?; \
	if [ $$status -eq 0 ]; then echo "make test-latest: green; \`make constraints VENV=$(LATEST)\` records these versions"; fi; \
	exit $$status

## constraints: record the versions installed in $(VENV) (run it when the suite passes there) in constraints.txt
constraints:
	@[ -x $(PY) ] || { echo "make constraints: no $(PY); run make test (or make test-latest) first" >&2; exit 1; }
	$(PY) tools/constraints.py write $(CONSTRAINTS)
	@if [ -f $(STAMP) ]; then touch $(STAMP); fi

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
	rm -rf $(VENV) $(LATEST)
