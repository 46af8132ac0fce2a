"""Shared fixtures: the packaged real model, temp roots and indexes; system tools a test needs.

`@pytest.mark.requires_tool("tesseract")` (or the `requires_tesseract` fixture) skips a test when the tool is
missing, naming the apt packages; with MINIRAG_REQUIRE_SYSTEM_TOOLS=1 (.ci/run) it fails instead, and any other
skip whose reason names an install command fails the run too, so CI keeps proving what it installed."""

import os
from pathlib import Path
import pytest
import system_tools


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "requires_tool(name, ...): needs a system tool pip cannot install "
        f"(one of {', '.join(system_tools.TOOLS)}); skipped when missing",
    )
    config.addinivalue_line("markers", "slow: runs every notebook of a kind (minutes); -m 'not slow' leaves it out")


def need_tool(name: str):
    "Skip (or, when required, fail) the running test if the system tool `name` is unusable here."
    if system_tools.problem(name) is None:
        return
    if system_tools.required():
        pytest.fail(f"{system_tools.REQUIRE_ENV}=1: {system_tools.reason(name)}", pytrace=False)
    pytest.skip(system_tools.reason(name))


def pytest_runtest_setup(item):
    for mark in item.iter_markers("requires_tool"):
        for name in mark.args:
            need_tool(name)


@pytest.fixture
def requires_tesseract():
    "tesseract with Russian and English data, or a skip naming the apt packages."
    need_tool("tesseract")


_INSTALL_SKIPS = []


def pytest_runtest_logreport(report):
    "Remember skips whose reason tells the user to install something (a tool or an extra)."
    if report.skipped and isinstance(report.longrepr, tuple):
        why = str(report.longrepr[2])
        if "apt-get install" in why or "pip install" in why:
            _INSTALL_SKIPS.append(f"{report.nodeid}: {why}")


def pytest_sessionfinish(session, exitstatus):
    if system_tools.required() and _INSTALL_SKIPS and exitstatus == 0:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"{system_tools.REQUIRE_ENV}=1 but {len(_INSTALL_SKIPS)} test(s) were skipped for a missing install:"]
        lines += [f"  {s}" for s in _INSTALL_SKIPS]
        (tr.write_line if tr else print)("\n".join(lines))
        session.exitstatus = 1


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    "The packaged all-MiniLM-L6-v2 int8 model assembled in a temp cache (the local-directory path of R-M1)."
    from minirag.embed import packaged_model_dir

    cache = Path(os.environ.get("MINIRAG_TEST_MODEL_CACHE", tmp_path_factory.mktemp("models")))
    return packaged_model_dir(cache)


@pytest.fixture(scope="session")
def shared_embedder(model_dir):
    "One loaded embedder for the whole session (loading takes ~1 s)."
    from minirag.embed import Embedder

    return Embedder(str(model_dir), model_dir.parent)


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "docs"
    r.mkdir()
    return Path(os.path.realpath(r))


@pytest.fixture
def index(root, model_dir, shared_embedder):
    "An Index over `root` using the real packaged model."
    from minirag.api import Index

    ix = Index.open(root, model_name=str(model_dir), cache_dir=model_dir.parent, embedder=shared_embedder)
    yield ix
    ix.close()


def write(root: Path, name: str, text: str) -> Path:
    p = root / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def said(report) -> list[str]:
    "A sync report's errors as `source: error` lines, then its warnings: the `warn:` lines its CLI prints."
    get = report.get if isinstance(report, dict) else lambda k: getattr(report, k)
    errors = [e if isinstance(e, dict) else dict(source=e.source, error=e.error) for e in get("errors") or []]
    return [f"{e['source']}: {e['error']}" for e in errors] + list(get("warnings") or [])
