"""Document labels end to end, through the installed CLI and a real MCP server: off without a taxonomy file; folder
rules, defaults and the embedding model; filters refused by name; a changed file relabels on the next sync from stored
vectors; a moved file gets its new folder's values; status and classify try."""

import json, os, subprocess, sys
from pathlib import Path
import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from conftest import write

CLI = str(Path(sys.executable).parent / "minirag-mcp")
TAXONOMY = """
[model]
repo = "someone/some-GGUF"
file = "model.gguf"
revision = "71c1c57e523219124f7be9c486d475d19891185f"
sha256 = "a0d2974e04541b79e167d8acabfb7a7e4b4f93f3b47ac4a006d196d240f68177"
temperature = 2.07

[facets.project]
default = "main"
values.main = { description = "The main product." }
values.pilots = { description = "Pilot projects.", paths = ["pilots"] }

[facets.type]
within = ["notes", "pilots"]
values.minutes = { description = "Minutes of a meeting: date, participants, decisions and actions." }
values.mail = { description = "An e-mail message with sender, recipients and a subject line." }
values.manual.description = "A manual: installation, configuration and usage instructions."
values.manual.paths = ["notes/manuals"]
"""
DOCS = {
    "notes/sync.md": (
        "Meeting minutes\n\nParticipants: Anna, Bob, Carol.\n\n"
        "Decisions: the pump is bought. Actions: Bob orders it by Friday.\n"
    ),
    "notes/mail.txt": (
        "From: Anna\nTo: Bob\nSubject: pump delivery\n\nHi Bob, the pump arrives on Friday. Regards, Anna\n"
    ),
    "notes/manuals/pump.md": "# Pump\n\nThe pump runs quietly.\n",
    "pilots/kickoff.md": (
        "Meeting minutes of the pilot kickoff\n\nParticipants: Dan, Eve.\n\n"
        "Decisions: start in May. Actions: Eve writes the plan.\n"
    ),
    "other/readme.md": "# Readme\n\nSome words about pumps.\n",
}


def cli(*args, env, cwd=None):
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def _env(root: Path, model_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("BASE_DIR", "BASE_DIRS", "DB_PATH")}
    return dict(
        env,
        BASE_DIR=str(root),
        DB_PATH=str(root.parent / "idx"),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
    )


def _labels(env) -> dict:
    r = json.loads(cli("list", "--json", env=env).stdout)
    root = Path(env["BASE_DIR"])
    return {
        Path(f["filePath"]).relative_to(root).as_posix(): {k: (v["value"], v["source"]) for k, v in f["labels"].items()}
        for f in r["files"]
        if "labels" in f
    }


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, model_dir):
    root = Path(os.path.realpath(tmp_path_factory.mktemp("labels"))) / "docs"
    for n, t in DOCS.items():
        write(root, n, t)
    env = _env(root, model_dir)
    r = cli("sync", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["relabelled"] == 0, r.stdout  # no taxonomy: a counter at 0
    listing = json.loads(cli("list", "--json", env=env).stdout)
    assert not any("labels" in f for f in listing["files"]) and "labels" not in json.loads(
        cli("status", "--json", env=env).stdout
    )
    write(root, ".minirag/classify.toml", TAXONOMY)
    r = cli("sync", "--json", env=env)  # the file appears: every document is labelled from its stored vectors
    assert (
        r.returncode == 0 and json.loads(r.stdout)["relabelled"] == len(DOCS) and json.loads(r.stdout)["ingested"] == 0
    ), r.stdout
    return root, env


def test_rules_defaults_within_and_the_model(corpus):
    root, env = corpus
    got = _labels(env)
    assert got["notes/manuals/pump.md"] == {"project": ("main", "default"), "type": ("manual", "path")}
    assert got["pilots/kickoff.md"]["project"] == ("pilots", "path")
    assert got["other/readme.md"] == {"project": ("main", "default")}  # outside `within`: no type at all
    assert got["notes/sync.md"]["type"] == ("minutes", "model") and got["notes/mail.txt"]["type"] == ("mail", "model")
    assert got["pilots/kickoff.md"]["type"] == ("minutes", "model")
    human = cli("list", "--scope", str(root / "notes" / "mail.txt"), env=env).stdout
    assert "[project=main type=mail" in human, human


def test_filters_and_their_refusals(corpus):
    root, env = corpus
    r = json.loads(cli("list", "--label", "type=minutes", "--json", env=env).stdout)
    assert sorted(Path(f["filePath"]).name for f in r["files"]) == ["kickoff.md", "sync.md"]
    assert r["filterCounts"] == {"unlabelled": 0, "undated": 0, "uncertain": 0}
    # a file kept on its uncertain label's runner-up is counted as such, in the answer and as a human warn: line
    r = json.loads(cli("list", "--label", "type=mail", "--json", env=env).stdout)
    soft = [f for f in r["files"] if f["labels"]["type"]["value"] != "mail"]
    assert soft and all(f["labels"]["type"]["uncertain"] and f["labels"]["type"]["runnerUp"] == "mail" for f in soft), r
    assert r["filterCounts"] == {"unlabelled": 0, "undated": 0, "uncertain": len(soft)}, r
    warn = cli("list", "--label", "type=mail", env=env).stderr
    assert f"warn: {len(soft)} document(s) matched only through an uncertain label's runner-up" in warn, warn
    r = json.loads(
        cli(
            "query",
            "pump",
            "--label",
            "project=pilots",
            "--label",
            "type=minutes",
            "--label",
            "type=mail",
            "--json",
            env=env,
        ).stdout
    )
    assert {s["displayPath"] for s in r["sources"]} == {"pilots/kickoff.md"}
    assert r["sources"][0]["labels"]["project"] == {
        "value": "pilots",
        "confidence": 1.0,
        "source": "path",
        "uncertain": False,
        "runnerUp": None,
        "runnerUpConfidence": None,
    }
    for args, msg in [
        (["--label", "kind=x"], "unknown facet 'kind'; the facets are: project, type"),
        (["--label", "type=memo"], "unknown value 'memo' for facet 'type'; its values are: minutes, mail, manual"),
    ]:
        p = cli("list", *args, env=env)
        assert p.returncode == 1 and msg in p.stderr, p.stderr


def test_mcp_tools_filter_by_label_and_status_describes_the_facets(corpus):
    root, env = corpus

    async def main():
        async with Client(
            StdioServerParameters(command=CLI, args=[], env=env), mode="auto", read_timeout_seconds=120
        ) as c:
            q = await c.call_tool(
                "query_documents", {"query": "pump delivery", "topK": 3, "labels": {"type": ["mail"]}}
            )
            bad = await c.call_tool("query_documents", {"query": "pump", "labels": {"type": "memo"}})
            st = await c.call_tool("status", {})
            return q, bad, st

    q, bad, st = anyio.run(main)
    assert not q.is_error and "notes/mail.txt" in {s["displayPath"] for s in q.structured_content["sources"]}
    soft = {s["displayPath"] for s in q.structured_content["sources"] if s["labels"]["type"]["value"] != "mail"}
    assert all(
        s["labels"]["type"]["runnerUp"] == "mail" for s in q.structured_content["sources"] if s["displayPath"] in soft
    )
    assert q.structured_content["filterCounts"]["uncertain"] >= len(soft)  # kept on a runner-up: counted (top 3 shown)
    assert bad.is_error and "its values are: minutes, mail, manual" in bad.content[0].text
    lab = st.structured_content["labels"]
    assert lab["facets"]["project"]["values"]["pilots"]["documents"] == 1 and lab["unlabelled"] == 0
    assert lab["facets"]["type"]["values"]["manual"]["description"].startswith("A manual")
    assert "names someone/some-GGUF/model.gguf, a generative model minirag does not run" in lab["notice"]


def test_classify_try_stores_nothing(corpus):
    root, env = corpus
    write(
        root,
        "notes/new-mail.txt",
        "From: Carol\nTo: Anna\nSubject: invoice\n\nHello Anna, the invoice is attached. Best, Carol\n",
    )
    try:
        r = cli("classify", "try", "notes/new-mail.txt", "--json", env=env, cwd=root)
        assert r.returncode == 0, r.stderr
        got = json.loads(r.stdout)
        assert got["labels"]["type"]["value"] == "mail" and got["labels"]["project"]["source"] == "default"
        assert (
            set(got["probabilities"]["type"]) == {"minutes", "mail", "manual"}
            and abs(sum(got["probabilities"]["type"].values()) - 1) < 1e-3
        )
        assert got["date"]["source"] == "file"
        human = cli("classify", "try", "notes/new-mail.txt", env=env, cwd=root).stdout.splitlines()
        assert (
            human[0] == "project: main  1.00 (default)"
            and human[1].startswith("type: mail ")
            and human[-1].startswith("date: ")
        )
        assert "notes/new-mail.txt" not in _labels(env)  # nothing stored
        r = cli("classify", "try", "other/readme.md", env=env, cwd=root)
        assert "type: not set (outside its within folders: notes, pilots)" in r.stdout, r.stdout
    finally:
        (root / "notes/new-mail.txt").unlink()


def test_a_changed_taxonomy_relabels_and_a_moved_file_gets_its_new_folders_values(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    for n, t in DOCS.items():
        write(root, n, t)
    write(root, ".minirag/classify.toml", TAXONOMY)
    env = _env(root, model_dir)
    assert json.loads(cli("sync", "--json", env=env).stdout)["relabelled"] == 0  # labelled as they were ingested
    assert _labels(env)["other/readme.md"] == {"project": ("main", "default")}
    (root / "other" / "readme.md").rename(root / "pilots" / "readme.md")
    r = json.loads(cli("sync", "--json", env=env).stdout)
    assert (r["moved"], r["ingested"], r["relabelled"]) == (1, 0, 1), r
    assert _labels(env)["pilots/readme.md"]["project"] == ("pilots", "path")
    write(root, ".minirag/classify.toml", TAXONOMY.replace('default = "main"', 'default = "pilots"'))
    r = json.loads(cli("sync", "--json", env=env).stdout)
    assert (r["ingested"], r["relabelled"]) == (0, len(DOCS)), r
    assert _labels(env)["notes/sync.md"]["project"] == ("pilots", "default")
    # the one-line summary of a human sync, and a background sync's status, carry the count
    write(
        root,
        ".minirag/classify.toml",
        TAXONOMY + "\n[facets.team]\ndefault = 'ops'\nvalues.ops = { description = 'Operations.' }\n",
    )
    line = cli("sync", env=env).stdout.splitlines()[0]
    assert line.startswith("ingested 0  skipped ") and line.endswith(f"  relabelled {len(DOCS)}"), line
    assert "relabelled" not in cli("sync", env=env).stdout  # nothing relabelled: the line stays as it was
    write(root, ".minirag/classify.toml", TAXONOMY.replace('default = "main"', 'default = "pilots"'))

    async def background():
        async with Client(
            StdioServerParameters(command=CLI, args=[], env=env), mode="auto", read_timeout_seconds=120
        ) as c:
            job = (await c.call_tool("sync_start", {})).structured_content["jobId"]
            for _ in range(600):
                st = (await c.call_tool("sync_status", {"jobId": job})).structured_content
                if st["state"] != "running":
                    return st
                await anyio.sleep(0.1)

    st = anyio.run(background)
    assert st["state"] == "succeeded" and st["counts"]["relabelled"] == len(DOCS), st
    # a broken file: status names the key, filters refuse with the same message, ingest goes on unlabelled
    write(root, ".minirag/classify.toml", TAXONOMY + "\n[facets.Bad]\nvalues.x = { description = 'y' }\n")
    st = json.loads(cli("status", "--json", env=env).stdout)
    assert "facet name 'Bad' must be a lowercase slug" in st["labels"]["error"]
    p = cli("list", "--label", "type=mail", env=env)
    assert p.returncode == 1 and "facet name 'Bad' must be a lowercase slug" in p.stderr
    write(
        root, ".minirag/classify.toml", TAXONOMY.replace("temperature = 2.07", "temperature = 2.07\nopening_chunks = 0")
    )
    st = json.loads(cli("status", "--json", env=env).stdout)  # a [model] key out of range is named with its fix
    assert "[model] opening_chunks must be a whole number from 1 to 16" in st["labels"]["error"], st["labels"]
    write(root, "notes/more.md", "# More\n\nText.\n")
    assert json.loads(cli("sync", "--json", env=env).stdout)["ingested"] == 1
    (root / ".minirag" / "classify.toml").unlink()  # gone: labels are cleared, no key appears again
    r = json.loads(cli("sync", "--json", env=env).stdout)
    assert r["relabelled"] == 0 and not any(
        "labels" in f for f in json.loads(cli("list", "--json", env=env).stdout)["files"]
    )
