"Tests that need a system tool: skipped with the apt-get line on a bare machine, failures where CI requires them."

import os, shutil, subprocess, sys
from pathlib import Path
import pytest

HERE = Path(__file__).parent
SAMPLE = """
import pytest
@pytest.mark.requires_tool("tesseract")
def test_marked(): pass
def test_fixture(requires_tesseract): pass
def test_plain(): pass
"""
INSTALL_SKIP = """
def test_skip_naming_an_install():
    pytest.skip("libfoo is missing (install: apt-get install libfoo)")
"""


def run_pytest(tmp_path, source, path_dirs, require):
    "Run pytest on `source` with this suite's conftest, PATH limited to `path_dirs`; (exit code, output)."
    for f in ("conftest.py", "system_tools.py"):
        shutil.copy(HERE / f, tmp_path / f)
    (tmp_path / "test_sample.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "MINIRAG_REQUIRE_SYSTEM_TOOLS"}
    env["PATH"] = os.pathsep.join(map(str, path_dirs))
    if require:
        env["MINIRAG_REQUIRE_SYSTEM_TOOLS"] = "1"
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-rsf", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return r.returncode, r.stdout + r.stderr


def test_missing_tool_is_a_skip_naming_the_apt_packages(tmp_path):
    code, out = run_pytest(tmp_path, SAMPLE, [tmp_path / "empty-bin"], require=False)
    assert code == 0, out
    assert "1 passed, 2 skipped" in out, out
    assert (
        out.count(
            "tesseract is not on PATH (install: apt-get install tesseract-ocr tesseract-ocr-rus tesseract-ocr-eng)"
        )
        == 2
    ), out


def test_required_missing_tool_fails(tmp_path):
    code, out = run_pytest(tmp_path, SAMPLE, [tmp_path / "empty-bin"], require=True)
    assert code == 1 and "1 passed, 2 errors" in out, out  # failed in setup: an error, not a skip
    assert "MINIRAG_REQUIRE_SYSTEM_TOOLS=1: tesseract is not on PATH" in out, out


def test_required_run_fails_on_any_skip_that_names_an_install(tmp_path):
    code, out = run_pytest(
        tmp_path, "import pytest\ndef test_plain(): pass\n" + INSTALL_SKIP, [tmp_path / "empty-bin"], require=True
    )
    assert code == 1 and "1 passed, 1 skipped" in out, out
    assert "test(s) were skipped for a missing install" in out and "apt-get install libfoo" in out, out
    code, out = run_pytest(
        tmp_path, "import pytest\ndef test_plain(): pass\n" + INSTALL_SKIP, [tmp_path / "empty-bin"], require=False
    )
    assert code == 0, out


@pytest.mark.requires_tool("tesseract")
def test_installed_tool_runs_under_the_requirement(tmp_path):
    tess = Path(shutil.which("tesseract")).parent
    code, out = run_pytest(tmp_path, SAMPLE, [tess], require=True)
    assert code == 0 and "3 passed" in out, out


def test_notebook_flags_follow_the_machine(tmp_path):
    "nbdev-test runs `#| tesseract` cells only where tesseract works; the check fails only when required."
    script = [sys.executable, str(HERE / "system_tools.py")]
    bare = dict(os.environ, PATH=str(tmp_path))
    bare.pop("MINIRAG_REQUIRE_SYSTEM_TOOLS", None)
    r = subprocess.run(script + ["--nbdev-flags"], env=bare, capture_output=True, text=True)
    assert r.returncode == 0 and "tesseract" not in r.stdout.split(), r.stdout
    r = subprocess.run(script + ["--check"], env=bare, capture_output=True, text=True)
    assert r.returncode == 0 and "'#| tesseract' skipped" in r.stderr and "apt-get install tesseract-ocr" in r.stderr, (
        r.stderr
    )
    r = subprocess.run(
        script + ["--check"], env=dict(bare, MINIRAG_REQUIRE_SYSTEM_TOOLS="1"), capture_output=True, text=True
    )
    assert r.returncode == 1 and "FAIL" in r.stderr, r.stderr
