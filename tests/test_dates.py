"""Document dates end to end: found on ingest in both languages (header, file name, file time), shown and filtered by
the installed CLI and a real MCP server, applied before the top-k cut, refused when malformed, and given by a sync to an
index written before dates."""

import json, os, subprocess, sys, time
from pathlib import Path
import anyio
import duckdb
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from conftest import write

CLI = str(Path(sys.executable).parent / "minirag-mcp")
OLD = time.mktime((2021, 6, 1, 12, 0, 0, 0, 0, -1))  # the file time of every file below: what a bulk copy leaves

# name -> (text, the date it must get, where from); generated documents of both languages, ambiguous forms included
DOCS = {
    "en/2026-08-12 minutes.md": ("# Weekly sync\n\nThe zebra pump schedule was agreed.\n", "2026-08-12", "name"),
    "en/mail.txt": (
        "From: Anna\nSent: 8/5/2026 10:32 AM\nSubject: zebra pump\n\nThe pump arrives.\n",
        "2026-08-05",
        "document",
    ),
    "ru/письмо.txt": (
        "От: Анна\nОтправлено: 8/5/2026 10:32\nТема: насос\n\nНасос прибудет.\n",
        "2026-05-08",
        "document",
    ),
    "ru/protocol.md": (
        "# Протокол совещания\n\n**Дата:** 05.08.2026\n\nПрисутствовали: все.\n",
        "2026-08-05",
        "document",
    ),
    "ru/letter.md": (
        "ООО «Ромашка»\nИсх. № 15/3 от 12.08.2026\n\nПо договору от 01.02.2025 сообщаем о поставке.\n",
        "2026-08-12",
        "document",
    ),
    "en/weekday.md": ("Weekly report\n\nFriday, 21 August 2026\n\nAll zebra pumps run.\n", "2026-08-21", "document"),
    "ru/Совещание 3 марта 2026.md": ("# Совещание\n\nОбсудили насосы.\n", "2026-03-03", "name"),
    "en/06-07-2026 act.md": ("# Act\n\nWork accepted.\n", "2026-07-06", "name"),
    "en/20260102_report.md": ("# Report\n\nNumbers.\n", "2026-01-02", "name"),
    # a Teams recording's header behind its name, a weekday date inside a header line, versions in file names
    "en/teams.md": (
        "Workshop-Meeting Recording\nAugust 5, 2026, 10:32AM 50m 59s\n\nAnna Smith 0:03\nThe zebra pumps.\n",
        "2026-08-05",
        "document",
    ),
    "en/recorded.md": (
        "Notes from the team\nRecorded on Friday, 21 August 2026 at 6:24 by Anna\n\nThe pumps ran.\n",
        "2026-08-21",
        "document",
    ),
    "en/api_v1.2.25.md": ("# API\n\nEndpoints of the pump service.\n", "2021-06-01", "file"),
    "en/release-2.10.3.md": ("# Release\n\nFixes.\n", "2021-06-01", "file"),
    # a body's dates are not the document's: a long first line is prose, and a later date is cited
    "en/cover.md": (
        "As agreed in the contract signed on 1 March 2024 and amended on 5 May 2025, we now deliver the second part "
        "of the zebra work described in the annex, with the same terms, the same prices "
        "and the same people as before.\n\n"
        "Yours, Anna\n",
        "2021-06-01",
        "file",
    ),
}


def cli(*args, env):
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, model_dir):
    "The documents above (and fourteen undated near-duplicates), ingested once through the CLI: (root, env)."
    root = Path(os.path.realpath(tmp_path_factory.mktemp("dates"))) / "docs"
    for n, (t, _, _) in DOCS.items():
        write(root, n, t)
    for i in range(14):  # more relevant to "zebra pump" than any dated document, all outside 2026
        write(
            root,
            f"old/zebra{i}.md",
            f"# Zebra pump {i}\n\nThe zebra pump zebra pump manual, part {i}: zebra pump oil.\n",
        )
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (OLD, OLD))
    env = {k: v for k, v in os.environ.items() if k not in ("BASE_DIR", "BASE_DIRS", "DB_PATH")}
    env.update(
        BASE_DIR=str(root), DB_PATH=str(root.parent / "idx"), MODEL_NAME=str(model_dir), CACHE_DIR=str(model_dir.parent)
    )
    r = cli("sync", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["ingested"] == len(DOCS) + 14, r.stderr
    return root, env


def _dates(listing: dict, root: Path) -> dict:
    return {
        Path(f["filePath"]).relative_to(root).as_posix(): (f["date"]["value"], f["date"]["source"])
        for f in listing["files"]
    }


def test_every_document_gets_its_date_and_its_source(corpus):
    root, env = corpus
    got = _dates(json.loads(cli("list", "--json", env=env).stdout), root)
    assert {n: got[n] for n in DOCS} == {n: (d, s) for n, (_, d, s) in DOCS.items()}
    assert got["old/zebra0.md"] == ("2021-06-01", "file")
    human = cli("list", "--scope", str(root / "ru"), env=env).stdout.splitlines()
    assert "indexed        letter.md  2026-08-12 (document)" in [l.replace("ru/", "") for l in human], human


def test_cli_filters_sorts_and_refuses(corpus):
    root, env = corpus
    r = json.loads(
        cli("list", "--date-from", "2026-08-05", "--date-to", "2026-08-12", "--sort", "date", "--json", env=env).stdout
    )
    names = [Path(f["filePath"]).name for f in r["files"]]
    assert names[:2] == ["2026-08-12 minutes.md", "letter.md"] and set(names[2:]) == {
        "mail.txt",
        "protocol.md",
        "teams.md",
    }, names
    assert r["filterCounts"] == {"unlabelled": 0, "undated": 0}
    # newest first, the file-time documents last among the dated ones
    r = json.loads(cli("list", "--sort", "date", "--json", env=env).stdout)
    days = [f["date"]["value"] for f in r["files"]]
    assert days == sorted(days, reverse=True) and "filterCounts" not in r
    for args, msg in [
        (["--date-from", "12.08.2026"], "dateFrom='12.08.2026' is not a date; use YYYY-MM-DD"),
        (["--date-to", "2026-02-30"], "dateTo='2026-02-30' is not a date"),
        (["--date-from", "2026-09-01", "--date-to", "2026-08-01"], "is after dateTo"),
        (["--label", "type=minutes"], "no taxonomy file"),
    ]:
        for cmd in (["list"], ["query", "pump"]):
            p = cli(*cmd, *args, env=env)
            assert p.returncode == 1 and msg in p.stderr and "Traceback" not in p.stderr, (cmd, args, p.stderr)
    p = cli("list", "--label", "minutes", env=env)
    assert p.returncode == 2 and "facet=value" in p.stderr


def test_a_bulk_copys_file_times_are_marked_where_dates_sort_or_filter(corpus):
    "Every file here has one file time, as a copy leaves them: the documents dated only by it say so."
    root, env = corpus
    r = json.loads(cli("list", "--sort", "date", "--json", env=env).stdout)
    by_time = {Path(f["filePath"]).name: f["date"].get("bulkCopy") for f in r["files"]}
    assert by_time["cover.md"] is True and by_time["zebra0.md"] is True and by_time["api_v1.2.25.md"] is True
    assert by_time["letter.md"] is None and by_time["20260102_report.md"] is None  # a header's or a name's date
    assert any("dated only by a file time they share with the other files of a bulk copy" in w for w in r["warnings"])
    assert "bulkCopy" not in json.dumps(json.loads(cli("list", "--json", env=env).stdout))  # no date sort: as before
    human = cli("list", "--sort", "date", env=env)
    assert "cover.md  2021-06-01 (file, bulk copy)" in human.stdout and "bulk copy" in human.stderr, human
    q = json.loads(cli("query", "zebra pump", "--date-to", "2021-12-31", "--json", env=env).stdout)
    assert q["sources"] and all(s["date"]["bulkCopy"] is True for s in q["sources"]), q["sources"]
    assert any("bulk copy" in w for w in q["warnings"]), q["warnings"]


def test_the_filter_is_applied_before_the_cut(corpus):
    "Fourteen undated-range documents rank above every 2026 one; a filtered top 3 still has three 2026 hits."
    root, env = corpus
    plain = json.loads(cli("query", "zebra pump", "--top-k", "3", "--json", env=env).stdout)
    assert all("/old/" in s["source"] for s in plain["sources"]), plain["sources"]
    for _ in range(2):  # a first one-shot query and one over the vectors' snapshot
        r = json.loads(
            cli("query", "zebra pump", "--top-k", "3", "--date-from", "2026-01-01", "--json", env=env).stdout
        )
        assert len(r["results"]) == 3 and all(s["date"]["value"] >= "2026-01-01" for s in r["sources"]), r["sources"]
    assert "/en/" in r["results"][0]["source"]
    human = cli("query", "zebra pump", "--top-k", "3", "--date-to", "2026-08-05", "--date-from", "2026-08-05", env=env)
    assert human.returncode == 0 and "(document)" in human.stdout.splitlines()[-1], human.stdout


def test_mcp_tools_take_the_same_filters(corpus):
    root, env = corpus
    params = StdioServerParameters(command=CLI, args=[], env=env)

    async def main():
        async with Client(params, mode="auto", read_timeout_seconds=120) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            q = await c.call_tool("query_documents", {"query": "zebra pump", "topK": 2, "dateFrom": "2026-08-01"})
            q2 = await c.call_tool("query_documents", {"query": "zebra pump", "topK": 2, "dateFrom": "2026-08-01"})
            ls = await c.call_tool("list_files", {"sort": "date", "dateTo": "2026-03-31", "dateFrom": "2026-01-01"})
            bad = await c.call_tool("list_files", {"dateFrom": "yesterday"})
            badsort = await c.call_tool("list_files", {"sort": "name"})
            return tools, q, q2, ls, bad, badsort

    tools, q, q2, ls, bad, badsort = anyio.run(main)
    assert {"labels", "dateFrom", "dateTo"} <= set(tools["query_documents"].input_schema["properties"])
    assert {"labels", "dateFrom", "dateTo", "sort"} <= set(tools["list_files"].input_schema["properties"])
    for r in (q, q2):  # the second over the vectors the server now holds
        assert not r.is_error and len(r.structured_content["results"]) == 2
        assert all(s["date"]["value"] >= "2026-08-01" for s in r.structured_content["sources"]), r.structured_content
        assert r.structured_content["filterCounts"] == {"unlabelled": 0, "undated": 0}
    assert [Path(f["filePath"]).name for f in ls.structured_content["files"]] == [
        "Совещание 3 марта 2026.md",
        "20260102_report.md",
    ]
    assert bad.is_error and "YYYY-MM-DD" in bad.content[0].text
    assert badsort.is_error and "'date'" in badsort.content[0].text


def test_a_data_item_is_dated_by_its_header_or_its_id(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    root.mkdir()
    env = dict(
        os.environ,
        BASE_DIR=str(root),
        DB_PATH=str(tmp_path / "idx"),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
    )
    from minirag.api import Index

    ix = Index.open(root, tmp_path / "idx", model_dir.parent, str(model_dir))
    ix.ingest_data("Meeting notes about pumps.", source="notes/2026-11-03-planning")
    ix.ingest_data("Date: 2026-10-01\n\nA memo.", source="notes/memo")
    ix.ingest_data("A note without a date.", source="notes/undated")
    got = {s.source: (s.date.value, s.date.source) if s.date else None for s in ix.list_files().sources}
    assert got == {
        "notes/2026-11-03-planning": ("2026-11-03", "name"),
        "notes/memo": ("2026-10-01", "document"),
        "notes/undated": None,
    }
    r = ix.list_files(date_from="2026-01-01")
    assert [s.source for s in r.sources] == ["notes/2026-11-03-planning", "notes/memo"] and r.filter_counts == {
        "unlabelled": 0,
        "undated": 1,
    }
    r = ix.query("pumps", date_to="2026-10-15")
    assert {h.source for h in r.hits} == {"notes/memo"} and r.filter_counts["undated"] == 1
    ix.close()


def test_an_index_written_before_dates_gets_them_on_the_next_sync(tmp_path, model_dir):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "2025-03-04 notes.md", "# Notes\n\nText.\n")
    write(root, "b.md", "Дата: 01.02.2026\n\nТекст.\n")
    env = dict(
        os.environ,
        BASE_DIR=str(root),
        DB_PATH=str(tmp_path / "idx"),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
    )
    assert cli("sync", env=env).returncode == 0
    con = duckdb.connect(str(tmp_path / "idx" / "index.duckdb"))  # what an older version wrote: no date columns at all
    con.execute("DROP TABLE labels")
    for c in ("doc_date", "date_source", "label_key"):
        con.execute(f"ALTER TABLE sources DROP COLUMN {c}")
    con.close()
    r = json.loads(cli("list", "--json", env=env).stdout)  # opened: migrated, still listing, not dated yet
    assert [f["state"] for f in r["files"]] == ["indexed", "indexed"] and not any("date" in f for f in r["files"])
    r = cli("sync", "--json", env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["ingested"] == 0 and json.loads(r.stdout)["skipped"] == 2
    got = {Path(f["filePath"]).name: f["date"] for f in json.loads(cli("list", "--json", env=env).stdout)["files"]}
    assert got == {
        "2025-03-04 notes.md": {"value": "2025-03-04", "source": "name"},
        "b.md": {"value": "2026-02-01", "source": "document"},
    }
