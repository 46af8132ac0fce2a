# The README's commands. `make demo` installs the package and runs the main job on the bundled samples;
# `make test` installs the test extras and runs every notebook and test. Both work in a fresh venv.
# Tests needing a system tool pip cannot install (tesseract…) are skipped with the apt-get line when it is
# missing; MINIRAG_REQUIRE_SYSTEM_TOOLS=1 (set by .ci/run) turns those skips into failures.
PY ?= python3
PIP = $(PY) -m pip install -q

.PHONY: install install-test demo test nbtest pytest bench outputs

install:  ## the package alone: MCP server, CLI and ingest (no notebook layer, no OCR)
	$(PIP) -e .

install-test:  ## everything the tests use: dev tools, the OCR, notebook, team (DuckLake) and outlook (.msg) extras
	$(PIP) -e '.[dev,ocr,notebook,team,outlook]'

demo: install
	minirag-mcp demo

nbtest: install-test
	nbdev-export
	$(PY) tests/system_tools.py --check
	nbdev-test --n-workers 2 --timing --flags "$$($(PY) tests/system_tools.py --nbdev-flags)"

pytest: install-test
	$(PY) -m pytest -q tests

test: nbtest pytest

bench: install-test  ## retrieval quality; EVAL=dir overrides the eval sets folder (default ../shared/eval beside the repo)
	$(PY) bench/bench_eval.py $(EVAL)

outputs: install-test  ## re-run every notebook (home page, tutorials, explanations, module pages), re-render the README (the docs test compares them)
	$(PY) tools/outputs.py
