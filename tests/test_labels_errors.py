"""A taxonomy file that cannot be used stops only the labels step, through the installed CLI and a real MCP server:
sync, list, query and status keep working; the problem is `status.labels.error` (before the first sync too) and one of
the sync's `errors`, `{"source": <file>, "error": "labels: <why>"}`, not counted as failed. The checks are fuzzed over
every key of the file."""

import json, math, os, shutil, subprocess, tempfile
from pathlib import Path
import anyio
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from conftest import write
from test_labels import CLI, _env, cli
from minirag.config import load_config
from minirag.facets import labels_problem, labels_status
from minirag.labels import Taxonomy, TaxonomyError, read_taxonomy, resolve

GOOD = '[facets.t]\nvalues.alpha = { description = "Alpha documents." }\n'
BAD = {
    "default-list": ('[facets.t]\ndefault = ["alpha"]\nvalues.alpha.description = "A."\n', "facets.t.default must be"),
    "default-table": (
        '[facets.t]\ndefault = { id = "alpha" }\nvalues.alpha.description = "A."\n',
        "facets.t.default must be",
    ),
    "model-path": (
        '[model]\npath = "~nosuchuser/x.gguf"\n' + GOOD,
        "path '~nosuchuser/x.gguf' cannot be expanded",
    ),
    "bad-toml": ("[facets.t\n", "is not valid TOML"),
    "absolute-paths": (
        '[facets.t]\nvalues.alpha = { description = "A.", paths = ["/etc/notes"] }\n',
        "'/etc/notes' is an absolute path",
    ),
    "absolute-within": ('[facets.t]\nwithin = ["/srv/docs"]\nvalues.alpha.description = "A."\n', "is an absolute path"),
    "a-folder": (None, "Is a directory"),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, model_dir):
    root = Path(os.path.realpath(tmp_path_factory.mktemp("taxerr"))) / "docs"
    write(root, "notes/pump.md", "# Pump\n\nThe pump runs quietly and is serviced every May.\n")
    write(root, "other/readme.md", "# Readme\n\nSome words about valves.\n")
    return root, _env(root, model_dir)


def _put(root: Path, text: str | None):
    p = root / ".minirag" / "classify.toml"
    if p.is_dir():
        p.rmdir()
    elif p.exists():
        p.unlink()
    p.parent.mkdir(parents=True, exist_ok=True)
    if text is None:
        p.mkdir()  # a folder where the file belongs
    else:
        p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize("case", list(BAD))
def test_a_broken_taxonomy_stops_nothing_but_labels(corpus, case):
    root, env = corpus
    text, msg = BAD[case]
    toml = _put(root, text)
    try:
        r = cli("sync", "--json", env=env)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        report = json.loads(r.stdout)
        [e] = report["errors"]  # the reference's shape: the taxonomy file, and its reason after "labels: "
        assert e["source"] == str(toml) and e["error"].startswith("labels: ") and msg in e["error"], r.stdout
        assert report["failed"] == 0 and not any("labels: " in w for w in report["warnings"]), r.stdout
        assert f"warn: {toml}: labels: " in cli("sync", env=env).stderr  # the human sync says it too, exit 0
        r = cli("list", "--json", env=env)
        assert r.returncode == 0 and len(json.loads(r.stdout)["files"]) == 2, r.stderr
        r = cli("query", "pump serviced", "--json", env=env)
        assert r.returncode == 0 and json.loads(r.stdout)["results"], r.stderr
        r = cli("status", "--json", env=env)
        assert r.returncode == 0, r.stderr
        lab = json.loads(r.stdout)["labels"]
        assert lab["file"] == str(toml) and msg in lab["error"], lab
    finally:
        _put(root, GOOD)


def test_status_names_the_error_before_the_first_sync_over_the_cli_and_mcp(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "a.md", "# A\n\nText.\n")
    write(root, "empty.md", "")  # a file that fails: an error counted as failed, beside the taxonomy's
    toml = _put(root, BAD["default-list"][0])
    env = _env(root, model_dir)
    r = cli("status", "--json", env=env)
    assert r.returncode == 0 and "facets.t.default must be" in json.loads(r.stdout)["labels"]["error"], r.stdout

    async def main():
        async with Client(
            StdioServerParameters(command=CLI, args=[], env=env), mode="auto", read_timeout_seconds=120
        ) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            before = await c.call_tool("status", {})
            job = (await c.call_tool("sync_start", {})).structured_content["jobId"]
            for _ in range(600):
                st = (await c.call_tool("sync_status", {"jobId": job})).structured_content
                if st["state"] != "running":
                    break
                await anyio.sleep(0.1)
            listed = await c.call_tool("list_files", {})
            return tools, before, st, listed

    tools, before, st, listed = anyio.run(main)
    assert not before.is_error and before.structured_content["labels"]["file"] == str(toml)
    assert "facets.t.default must be" in before.structured_content["labels"]["error"]
    assert st["state"] == "succeeded" and (st["counts"]["ingested"], st["counts"]["failed"]) == (1, 1), st
    assert [e["source"] for e in st["errors"]] == [str(root / "empty.md"), str(toml)], st
    assert st["errors"][0]["error"] == "the file is empty (0 bytes); nothing to index", st
    assert st["errors"][1]["error"].startswith("labels: facets.t.default must be"), st
    assert st["counts"]["warnings"] == [] and "errors" not in st["counts"], st
    jsonschema.validate(st, tools["sync_status"].output_schema)
    assert not listed.is_error and len(listed.structured_content["files"]) == 2


def test_an_unreadable_taxonomy_file_is_reported_not_raised(tmp_path, model_dir):
    # root without the capability to override file permissions reads files as their mode says (as a non-root user)
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is needed to drop the permission override")
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "a.md", "# A\n\nPumps and valves.\n")
    toml = _put(root, GOOD)
    toml.chmod(0)
    env = _env(root, model_dir)
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    run = lambda *a: subprocess.run([*drop, CLI, *a], capture_output=True, text=True, env=env, timeout=300)
    try:
        probe = subprocess.run([*drop, "cat", str(toml)], capture_output=True)
        if probe.returncode == 0:
            pytest.skip("this process reads files whatever their mode")
        r = run("sync", "--json")
        assert r.returncode == 0, r.stderr
        [e] = json.loads(r.stdout)["errors"]
        assert e["source"] == str(toml) and e["error"].startswith("labels: cannot read"), r.stdout
        assert "Permission denied" in e["error"], r.stdout
        lab = json.loads(run("status", "--json").stdout)["labels"]
        assert "Permission denied" in lab["error"], lab
        assert json.loads(run("query", "pumps", "--json").stdout)["results"]
    finally:
        toml.chmod(0o644)


# the fuzz: a wrong value at any key of the file is a TaxonomyError naming it, never another exception
_KEYS = [
    "model",
    "model.path",
    "model.repo",
    "model.file",
    "model.revision",
    "model.sha256",
    "model.temperature",
    "model.uncertain_below",
    "model.opening_chunks",
    "model.file_name_label",
    "facets",
    "facets.t",
    "facets.t.question",
    "facets.t.within",
    "facets.t.default",
    "facets.t.override_at",
    "facets.t.values",
    "facets.t.values.alpha",
    "facets.t.values.alpha.description",
    "facets.t.values.alpha.paths",
    "facets.t.values.beta.paths",
]
_BASE = {
    "facets.t.values.alpha.description": '"Alpha documents."',
    "facets.t.values.beta.description": '"Beta documents."',
    "facets.t.values.beta.paths": '["beta"]',
}


def _literal(v) -> str:
    "`v` written as a TOML value."
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, (int, str)):
        return json.dumps(v) if isinstance(v, str) else str(v)
    if isinstance(v, list):
        return "[" + ", ".join(map(_literal, v)) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {_literal(x)}" for k, x in v.items()) + " }"


_scalars = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["alpha", "beta", "/abs", "~nosuchuser/x", "~", "", " ", "a/../b", "C:\\docs", "0" * 64]),
    st.integers(-3, 20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["id", "description", "paths", "alpha", "x"]), inner, max_size=2)
    ),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_KEYS), _values, min_size=1, max_size=3))
def test_fuzzed_taxonomy_files_raise_only_taxonomy_errors(changes):
    lines = {**_BASE, **{k: _literal(v) for k, v in changes.items()}}
    text = "\n".join(f"{k} = {v}" for k, v in lines.items()) + "\n"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / ".minirag" / "classify.toml"
        p.parent.mkdir()
        p.write_text(text, encoding="utf-8")
        got = read_taxonomy(p)
        assert isinstance(got, (Taxonomy, TaxonomyError)), got
        problem = labels_problem([d])
        status = labels_status(None, load_config({}, [d]), False)
        if isinstance(got, TaxonomyError):
            assert problem == f"{p}: labels: {got}" and status["error"] == str(got)
            return
        assert problem is None and "facets" in status
        for rel in ("beta/x.md", "alpha/y.md", "z.md", None):  # the rules apply without an exception
            resolve(got, rel, lambda f: None)
