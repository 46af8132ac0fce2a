# The README's commands. `make demo` installs the package and runs the main job on the bundled samples;
# `make test` installs the test extras and runs every notebook and test; `make docs` renders the site into _docs/.
# They work on a fresh machine: they create a local virtual environment in .venv (with uv when it is on PATH, else
# python3 -m venv) and install into it, so a system Python that refuses pip (Debian's externally-managed-environment)
# is never touched.
# An active virtual environment is used as it is; `make test PY=python3` (what .ci/run does) uses that interpreter
# and its pip directly, with no .venv.
# Tests needing a system tool pip cannot install (tesseract…) are skipped with the apt-get line when it is
# missing; MINIRAG_REQUIRE_SYSTEM_TOOLS=1 (set by .ci/run) turns those skips into failures.
VENV ?= .venv
UV := $(shell command -v uv 2>/dev/null)

ifeq ($(origin PY),undefined)
ifdef VIRTUAL_ENV
PY := python3
else
PY := $(VENV)/bin/python
ENV_READY := $(VENV)/bin/python
export PATH := $(abspath $(VENV))/bin:$(PATH)
export VIRTUAL_ENV := $(abspath $(VENV))
endif
endif

ifneq ($(UV),)
PIP = $(UV) pip install -q --python $(PY)
else
PIP = $(PY) -m pip install -q
endif

.PHONY: venv install install-test demo test nbtest pytest bench outputs docs

$(VENV)/bin/python:
ifneq ($(UV),)
	$(UV) venv -q $(VENV)
else
	python3 -m venv $(VENV) || { rm -rf $(VENV); \
	  echo "make: python3 -m venv failed: install uv, or on Debian/Ubuntu apt-get install python3-venv" >&2; exit 1; }
endif

venv: $(ENV_READY)  ## the local virtual environment the other targets install into

install: $(ENV_READY)  ## the package alone: MCP server, CLI and ingest (no notebook layer, no OCR)
	$(PIP) -e .

install-test: $(ENV_READY)  ## everything the tests use: dev tools, the OCR, notebook, team (DuckLake) and outlook (.msg) extras
	$(PIP) -e '.[dev,ocr,notebook,team,outlook]'

demo: install
	minirag-mcp demo

nbtest: install-test
	nbdev-export
	$(PY) tests/system_tools.py --check
	@echo "nbdev-test: each notebook's start and end as it runs, then the slowest first"
	PYTHONUNBUFFERED=1 nbdev-test --n-workers 2 --do-print --timing --flags "$$($(PY) tests/system_tools.py --nbdev-flags)"

# pytest runs two test files at a time (the machines have two cores) and names the slowest tests at the end
pytest: install-test
	$(PY) -m pytest -q -n 2 --dist loadfile --durations=20 tests

test: nbtest pytest

bench: install-test  ## retrieval quality; EVAL=dir overrides the eval sets folder (default ../shared/eval beside the repo)
	$(PY) bench/bench_eval.py $(EVAL)

docs: install-test  ## the documentation site in _docs/: pandoc renders it (apt-get install pandoc), Quarto when on PATH
	nbdev-export
	$(PY) tools/docs.py$(if $(shell command -v quarto 2>/dev/null),, --html _docs)

outputs: install-test  ## re-run every notebook (home page, tutorials, explanations, module pages), re-render the README (the docs test compares them)
	$(PY) tools/outputs.py
