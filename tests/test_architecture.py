"""The written layers hold: `lint-imports` keeps pyproject.toml's contracts, `ruff check nbs` keeps the notebooks'
lines plain, and nbs/explanations/architecture.ipynb draws every module the contracts place.

Both tools come from the `dev` extra (pinned there) and run as the console scripts beside this interpreter. Each
check is also shown to fail on a deliberate violation, in a copy of the package under a temp folder."""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "nbs" / "explanations" / "architecture.ipynb"


def tool(name: str) -> str:
    "The console script `name` installed beside this interpreter (the pinned dev extra), else the one on PATH."
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'", pytrace=False)
    return found


def run(args: list, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # grimp must read the package under cwd, not an installed one
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def layer_modules(container: str | None = None) -> list[str]:
    "Every module the layers contracts name (of one container, or of all), optional ones included, high to low."
    layers = [c for c in contracts() if c["type"] == "layers" and container in (None, *c["containers"])]
    names = [layer for c in layers for layer in c["layers"]]
    return [name.strip().strip("()") for layer in names for name in re.split(r"[|:]", layer)]


def children(package: Path) -> list[str]:
    "The modules and subpackages directly in a package folder (private ones left out)."
    found = [p.stem for p in package.glob("*.py")] + [p.name for p in package.iterdir() if (p / "__init__.py").exists()]
    return sorted(m for m in found if not m.startswith("_"))


def test_import_contracts_are_kept():
    r = run([tool("lint-imports")], ROOT)
    assert r.returncode == 0, f"lint-imports: an import breaks a contract in pyproject.toml\n{r.stdout[-4000:]}"


def test_notebooks_tests_and_bench_pass_ruff():
    "pyproject.toml's ruff rules hold the notebooks (the source), the tests and the bench scripts alike."
    r = run([tool("ruff"), "check", "--output-format", "concise"], ROOT)
    assert r.returncode == 0, f"ruff check (fix it, or `ruff format <file>`):\n{r.stdout[-4000:]}"


@pytest.fixture
def package_copy(tmp_path):
    "The package's modules and pyproject.toml copied to a temp folder, to break on purpose."
    shutil.copytree(ROOT / "minirag", tmp_path / "minirag", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def test_an_upward_import_breaks_the_layers(package_copy):
    tokens = package_copy / "minirag" / "tokens.py"
    tokens.write_text(tokens.read_text() + "\nfrom minirag import server  # a low layer reaching up\n")
    r = run([tool("lint-imports")], package_copy)
    assert r.returncode != 0 and "minirag.tokens is not allowed to import minirag.server" in r.stdout, r.stdout


def test_a_module_outside_the_layers_breaks_the_contract(package_copy):
    (package_copy / "minirag" / "helpers.py").write_text("from minirag import config\n")
    r = run([tool("lint-imports")], package_copy)
    assert r.returncode != 0 and "minirag.helpers" in r.stdout, r.stdout


def test_an_optional_layer_is_checked_once_it_exists(package_copy):
    (package_copy / "minirag" / "tuning.py").write_text("from minirag import store\n")
    r = run([tool("lint-imports")], package_copy)
    assert r.returncode != 0 and "minirag.tuning is not allowed to import minirag.store" in r.stdout, r.stdout


def test_a_format_module_outside_formats_breaks_a_contract(package_copy):
    "Only convert imports a format: a module outside formats reaching a single reader breaks the contract."
    api = package_copy / "minirag" / "api.py"
    api.write_text(api.read_text() + "\nfrom minirag.formats.html import decode_html  # past the door\n")
    r = run([tool("lint-imports")], package_copy)
    assert r.returncode != 0 and "minirag.api is not allowed to import minirag.formats.html" in r.stdout, r.stdout


def test_a_format_module_outside_the_formats_layers_breaks_the_contract(package_copy):
    (package_copy / "minirag" / "formats" / "stray.py").write_text("from minirag.formats import text\n")
    r = run([tool("lint-imports")], package_copy)
    assert r.returncode != 0 and "minirag.formats.stray" in r.stdout, r.stdout


def test_mcp_outside_the_server_breaks_a_contract(package_copy):
    api = package_copy / "minirag" / "api.py"
    api.write_text(api.read_text() + "\nimport mcp\n")
    r = run([tool("lint-imports")], package_copy)
    assert r.returncode != 0 and "minirag.api is not allowed to import mcp" in r.stdout, r.stdout


def test_a_lake_import_outside_the_engine_breaks_a_contract(package_copy):
    sync = package_copy / "minirag" / "sync.py"
    sync.write_text(sync.read_text() + "\nfrom minirag.lake import open_store  # a backend picked below the engine\n")
    r = run([tool("lint-imports")], package_copy)
    assert r.returncode != 0 and "minirag.sync is not allowed to import minirag.lake" in r.stdout, r.stdout


def test_a_long_line_in_a_notebook_fails_ruff(tmp_path):
    nb = json.loads(PAGE.read_text())
    nb["cells"] = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "x",
            "metadata": {},
            "outputs": [],
            "source": ["import os\n", "x = 1; y = '" + "a" * 130 + "'\n"],
        }
    ]
    (tmp_path / "nbs").mkdir()
    (tmp_path / "nbs" / "bad.ipynb").write_text(json.dumps(nb))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_bad.py").write_text("import os\nx = 1; y = 2\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    r = run([tool("ruff"), "check", "--output-format", "concise"], tmp_path)
    assert r.returncode != 0 and all(code in r.stdout for code in ("E501", "E702", "F401")), r.stdout
    assert "tests/test_bad.py" in r.stdout and "nbs/bad.ipynb" in r.stdout, r.stdout


def test_the_page_draws_every_module_the_layers_place():
    "The architecture page's diagram names every layer's modules, and the contract places every module there is."
    page = "".join("".join(c["source"]) for c in json.loads(PAGE.read_text())["cells"] if c["cell_type"] == "markdown")
    (diagram,) = re.findall(r"```\{?mermaid\}?\n(.*?)```", page, flags=re.S)
    drawn = set(re.findall(r"\b([a-z0-9_]+)\b", diagram))
    missing = [m for m in layer_modules() if m not in drawn]
    assert not missing, f"the layers contract names modules the architecture page does not draw: {missing}"
    for c in [c for c in contracts() if c["type"] == "layers"]:
        (container,) = c["containers"]
        placed = layer_modules(container)
        unplaced = [m for m in children(ROOT.joinpath(*container.split("."))) if m not in placed]
        assert not unplaced, f"modules of {container} in no layer of pyproject.toml's contract: {unplaced}"
