# The two commands of the README. Each bootstraps a local virtualenv (.venv) on first use.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
ARGS   ?=

.PHONY: lab demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v "is ignored: it is neither" || true
	$(PY) -c "import wm_kernel, trinkets, IPython, ipywidgets, nbval, tiktoken"
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
	@$(PY) -m pytest -q $(ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests" >&2; fi; \
	exit $$status

## bench: the benchmarks (ratios against a floor measured in the same run; a few minutes)
bench: $(STAMP)
	$(PY) bench/compose.py
	$(PY) bench/replay.py
	$(PY) bench/dashboard.py

clean:
	rm -rf $(VENV)
