"""Packaging: the licence file matches the declared licence; sdist and wheel build without setuptools warnings, carry
the package data and leave tests out; benchmarks use no absolute paths."""

import re, shutil, subprocess, sys, tarfile, tomllib, zipfile
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]
SKIP = shutil.ignore_patterns(
    ".git", ".venv", "*.egg-info", "__pycache__", "build", "dist", "_proc", "_docs", ".pytest_cache"
)


def test_license_file_is_the_declared_apache_2_0():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "Apache-2.0"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
    assert len(re.findall(r"^\s+\d+\. [A-Z]", text, re.M)) == 9  # the nine numbered sections


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    "sdist, then a wheel built from that sdist (as `python -m build` does), from a copy of the work tree."
    src = tmp_path_factory.mktemp("src") / "minirag"
    shutil.copytree(REPO, src, ignore=SKIP)
    pytest.importorskip("build", reason="the build frontend is not installed (install: pip install 'minirag[dev]')")
    r = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(src / "dist"), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (sdist,), (wheel,) = list((src / "dist").glob("*.tar.gz")), list((src / "dist").glob("*.whl"))
    return r.stdout + r.stderr, sdist, wheel


def test_build_has_no_setuptools_package_warnings(built):
    log = built[0]
    assert "is absent from the `packages` configuration" not in log and "Package would be ignored" not in log, log[
        -3000:
    ]
    assert not [l for l in log.splitlines() if "SetuptoolsDeprecationWarning" in l or "UserWarning" in l]


def test_sdist_carries_package_data_and_leaves_tests_out(built):
    names = [n.split("/", 1)[1] for n in tarfile.open(built[1]).getnames() if "/" in n]
    for must in (
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "minirag/__init__.py",
        "minirag/assets/all-MiniLM-L6-v2/tokenizer.json",
        "minirag/sample_docs/contacts.csv",
    ):
        assert must in names, must
    assert not [n for n in names if n.startswith("tests")], (
        "tests ship only with their data and conftest, or not at all"
    )


def test_wheel_carries_the_model_files_sample_docs_and_license(built):
    names = zipfile.ZipFile(built[2]).namelist()
    samples = {p.name for p in (REPO / "minirag" / "sample_docs").iterdir() if p.is_file()}
    assert samples and samples <= {Path(n).name for n in names if n.startswith("minirag/sample_docs/")}
    assert {
        f"minirag/assets/all-MiniLM-L6-v2/{f}"
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")
    } <= set(names)
    assert {"minirag/assets/eval/evaluation_results.json", "minirag/assets/eval/model_stand_in.json"} <= set(names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_wheel_carries_every_module_of_the_subpackages(built):
    "Every module of the work tree, those in folders such as minirag/formats included, is in the wheel."
    names = set(zipfile.ZipFile(built[2]).namelist())
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "minirag").rglob("*.py") if "__pycache__" not in p.parts}
    assert "minirag/formats/convert.py" in modules and "minirag/formats/__init__.py" in modules
    assert not modules - names, sorted(modules - names)


def test_no_absolute_work_paths_in_scripts():
    files = [
        p
        for d in ("bench", "tools", "tests", ".ci")
        for p in (REPO / d).rglob("*")
        if p.is_file() and p.suffix in (".py", ".sh", "") and "data" not in p.relative_to(REPO).parts
    ]
    files += [REPO / "Makefile", REPO / "pyproject.toml"]
    bad = [
        str(p.relative_to(REPO))
        for p in files
        if "/work/" in p.read_text(errors="replace") and p.name != "test_packaging.py"
    ]
    assert bad == [], bad


def test_benchmarks_take_the_eval_folder_as_an_argument(tmp_path):
    "Every benchmark that reads eval sets accepts the folder, defaults to ../shared/eval, and names a missing one."
    for script, args in [
        ("bench_eval.py", [str(tmp_path / "nope")]),
        ("bench_sync.py", ["--eval", str(tmp_path / "nope")]),
        ("bench_index.py", ["--eval", str(tmp_path / "nope"), "--sizes", "10"]),
    ]:
        r = subprocess.run(
            [sys.executable, str(REPO / "bench" / script), *args], capture_output=True, text=True, timeout=120
        )
        assert r.returncode != 0 and f"eval folder {tmp_path / 'nope'} not found" in r.stderr, (
            script,
            r.stderr[-1500:],
        )
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import evaldir

        assert evaldir.DEFAULT == REPO.parent / "shared" / "eval"
    finally:
        sys.path.remove(str(REPO / "bench"))


def _reqs(group=None):
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return meta["dependencies"] if group is None else meta["optional-dependencies"][group]


def _name(req):
    return re.match(r"[A-Za-z0-9._-]+", req).group().lower()


def test_only_the_index_format_is_pinned_exactly_and_every_other_dependency_has_a_range():
    exact = {_name(r) for g in (None, "notebook", "ocr") for r in _reqs(g) if "==" in r.split(";")[0]}
    assert exact == {"duckdb", "duckdb-extension-vss", "duckdb-extension-fts"}, exact
    for g in (None, "notebook", "ocr", "dev"):
        for r in _reqs(g):
            spec = r.split(";")[0]
            assert "==" in spec or (">=" in spec and "<" in spec.replace("<=", "")), (
                f"{r}: give it a compatible range (>=x,<y)"
            )


def test_the_notebook_layer_is_an_extra():
    core = {_name(r) for r in _reqs()}
    assert not core & {"pandas", "ipywidgets", "ipython", "matplotlib"}, core
    assert {"pandas", "ipywidgets", "ipython", "matplotlib"} <= {_name(r) for r in _reqs("notebook")}
    assert not [r for r in _reqs() if r.startswith("markitdown") and "xlsx" in r.split(";")[0]], (
        "markitdown[xlsx] pulls pandas"
    )
