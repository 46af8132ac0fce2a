"""The README's quick start on a fresh machine: `make demo` and `make test` install into a local .venv (never into
a system Python that refuses pip), with uv when it is on PATH; an active venv or `PY=...` (what .ci/run passes) is
used as it is."""

import os, shutil, subprocess, sys
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not on PATH")


def make(*args, cwd=REPO, path=None, **env):
    "Run make with none of the caller's make or venv settings (a fresh shell's environment plus `env`)."
    base = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "VIRTUAL_ENV", "PY")}
    if path is not None:
        base["PATH"] = path
    r = subprocess.run(["make", *args], cwd=cwd, env=base | env, capture_output=True, text=True, timeout=300)
    return r


def no_uv_path(tmp_path):
    "PATH with python3 and make but no uv: a folder of symlinks to the two."
    d = tmp_path / "bin"
    if not d.exists():
        d.mkdir()
        (d / "python3").symlink_to(sys.executable)
        (d / "make").symlink_to(shutil.which("make"))
    return str(d)


def test_demo_creates_and_installs_into_a_local_venv(tmp_path):
    r = make("-n", "demo", path=no_uv_path(tmp_path))
    lines = r.stdout.splitlines()
    assert r.returncode == 0, r.stderr
    assert lines[0].startswith("python3 -m venv .venv"), lines
    assert lines[2] == ".venv/bin/python -m pip install -q -e .", lines
    assert lines[3] == "minirag-mcp demo", lines


def test_uv_when_present_makes_the_venv_and_installs(tmp_path):
    path = no_uv_path(tmp_path)
    uv = Path(path) / "uv"
    uv.write_text('#!/bin/sh\necho uv "$@"\n')
    uv.chmod(0o755)
    r = make("-n", "install-test", path=path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"{uv} venv -q .venv",
        f"{uv} pip install -q --python .venv/bin/python -e '.[dev,ocr,notebook,team,outlook]'",
    ]


def test_py_override_and_an_active_venv_use_that_interpreter(tmp_path):
    for args, env in [(("PY=python3",), {}), ((), {"VIRTUAL_ENV": str(tmp_path)})]:
        r = make("-n", "pytest", *args, path=no_uv_path(tmp_path), **env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines() == [
            "python3 -m pip install -q -e '.[dev,ocr,notebook,team,outlook]'",
            "python3 -m pytest -q -n 2 --dist loadfile --durations=20 tests",
        ], (args, env)


def test_venv_target_makes_a_working_venv(tmp_path):
    "The real thing, in a folder holding only the Makefile: .venv/bin/python runs and make's PATH puts it first."
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    r = make("venv", cwd=tmp_path, path=no_uv_path(tmp_path))
    assert r.returncode == 0, r.stderr
    out = subprocess.run(
        [tmp_path / ".venv/bin/python", "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True
    )
    assert Path(out.stdout.strip()) == tmp_path / ".venv"
    again = make("venv", cwd=tmp_path, path=no_uv_path(tmp_path))
    assert "Nothing to be done" in again.stdout or again.stdout.strip() == "", again.stdout


def test_readme_installs_this_package_not_a_namesake_from_pypi():
    "minirag is not on PyPI and minirag-mcp there is another project: the README installs from a clone or wheel."
    readme = (REPO / "README.md").read_text()
    assert "pip install ." in readme and "uv tool install ." in readme and "uvx --from /path/to/minirag" in readme
    import re

    said = re.finditer(r"pip install minirag(\s|$|`)", readme)
    lean = [m for m in said if "finds nothing" not in readme[m.end() :][:20]]
    assert not lean, "pip install minirag finds nothing on PyPI"
    launches = re.findall(r'"command":\s*"uvx",\s*"args":\s*\[([^\]]*)\]', readme)
    assert launches and all('"--from"' in a for a in launches), launches


def test_docs_renders_the_site_with_pandoc_or_quarto_when_present(tmp_path):
    "`make docs` installs the test extras and renders into _docs/: pandoc's offline site, or Quarto where it is."
    path = no_uv_path(tmp_path)
    r = make("-n", "docs", path=path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[2] == ".venv/bin/python -m pip install -q -e '.[dev,ocr,notebook,team,outlook]'", lines
    assert lines[-2:] == ["nbdev-export", ".venv/bin/python tools/docs.py --html _docs"], lines
    quarto = Path(path) / "quarto"
    quarto.write_text("#!/bin/sh\n")
    quarto.chmod(0o755)
    assert make("-n", "docs", path=path).stdout.splitlines()[-1] == ".venv/bin/python tools/docs.py"


def test_notebook_tests_show_each_notebook_as_it_runs(tmp_path):
    "nbdev-test prints nothing until every notebook is done unless asked: make test asks, unbuffered through a pipe."
    r = make("-n", "nbtest", "PY=python3", path=no_uv_path(tmp_path))
    assert r.returncode == 0, r.stderr
    run = [l for l in r.stdout.splitlines() if "nbdev-test " in l and not l.startswith("echo")]
    assert len(run) == 1 and run[0].startswith("PYTHONUNBUFFERED=1 nbdev-test "), run
    assert "--do-print" in run[0] and "--timing" in run[0], run
