# The README's commands. `make demo` installs and runs the main job on the bundled samples; `make test` runs every test.
PY ?= python3

.PHONY: install demo test nbtest pytest bench

install:
	$(PY) -m pip install -q -e '.[dev]'

demo: install
	minirag-mcp demo

nbtest:
	nbdev-export
	nbdev-test --n-workers 2 --timing

pytest:
	$(PY) -m pytest -q tests

test: nbtest pytest

bench:
	$(PY) bench/run_all.py
