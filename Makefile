# Two commands on a fresh machine: `make demo` (the main job) and `make test` (the tests).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PLUGINS := $(wildcard plugins/*/pyproject.toml)
EXAMPLES := $(wildcard examples/*/pyproject.toml)
STAMP := $(VENV)/.installed

.PHONY: demo test bench venv clean docs

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# setuptools prints a notice box for every editable install (a UserWarning): quieted below
$(STAMP): $(PY) pyproject.toml $(PLUGINS) $(EXAMPLES)
	PYTHONWARNINGS=ignore::UserWarning $(PY) -m pip install --quiet -e ".[test,bench,ort,ray]" \
		$(foreach p,$(PLUGINS) $(EXAMPLES),-e $(dir $(p)))
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m onemodel.demo
	@echo
	@echo "next, the command line on the files the demo left (or 'source $(VENV)/bin/activate' first):"
	@echo "  $(VENV)/bin/onemodel info demo-output/glyphs.onemodel"

test: $(STAMP)
	$(PY) -m ruff check --quiet .
	$(PY) -m mypy
	$(PY) -m pytest

bench: $(STAMP)
	PYTHONWARNINGS=ignore::UserWarning $(PY) -m pip install --quiet -e ".[peers]"
	mkdir -p .benchmarks
	$(PY) -m pytest benchmarks --benchmark-only -p no:randomly --benchmark-json .benchmarks/latest.json
	$(PY) -m onemodel.tools.write_benchmarks .benchmarks/latest.json

docs: $(STAMP)
	$(PY) tools/update_ops_table.py

clean:
	rm -rf $(VENV)
