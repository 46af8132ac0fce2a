"""A team index whose data lies on an S3-compatible server (moto's, started by the tests with its signature and IAM
checks on: tests/s3.py) and whose catalog is a real PostgreSQL (tests/pg.py): the AWS variables reach the lake, a bad
key, bucket or endpoint is a clear error within the stated time, writers and readers on several 'machines' share one
lake under a bucket's prefix, `maintain` merges on it and deletes expired files from it, `copy` works on it, a writer
killed mid-commit leaves it consistent, and two HTTP servers answer the same tokens over the same lake."""

import json, os, signal, socket, subprocess, sys, threading, time, uuid
from pathlib import Path
import pytest
from conftest import write
from s3 import S3, need_s3_server
from test_lake_writers import assert_exact, committed_writes, pg, rows_by_source, writer  # noqa: F401  (pg: a fixture)

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # minutes: most tests start processes that each load the model


@pytest.fixture(scope="session")
def s3():
    need_s3_server()
    with S3() as server:
        yield server


@pytest.fixture
def lake(pg, s3):
    "A fresh catalog and a fresh bucket: the lake's two halves, as every machine of the team names them."
    bucket = "team-" + uuid.uuid4().hex[:8]
    return dict(MINIRAG_CATALOG=pg.new_database(), MINIRAG_DATA=f"s3://{bucket}/", **s3.env(bucket))


PREFIX = "team/minirag/"
OTHERS = ("team/notes.txt", "elsewhere/report.csv")  # the team's other objects in the bucket


@pytest.fixture
def prefixed(lake, s3):
    "A lake under a prefix of a bucket that holds other objects too (`MINIRAG_DATA=s3://bucket/team/minirag/`)."
    bucket = lake["MINIRAG_DATA"].removeprefix("s3://").rstrip("/")
    for key in OTHERS:
        s3.client().put_object(Bucket=bucket, Key=key, Body=b"not the lake's")
    return dict(lake, MINIRAG_DATA=f"s3://{bucket}/{PREFIX}")


def machine(lake, tmp_path, model_dir, root, home, **extra) -> dict:
    "One 'machine' of the team: its own home and caches; the catalog and the bucket shared."
    return dict(
        os.environ,
        BASE_DIR=str(root),
        DB_PATH=str(tmp_path / home),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
        PYTHONPATH=str(REPO),
        **lake,
        **extra,
    )


def cli(env, *args, ok=True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "minirag.cli", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert "Traceback" not in r.stderr, r.stderr
    assert not ok or r.returncode == 0, r.stderr
    return r


def cli_json(env, *args) -> dict:
    return json.loads(cli(env, *args, "--json").stdout)


def notes(root, n=6):
    for i in range(n):
        body = " ".join(f"word{(i * 7 + j) % 40} topic{i}" for j in range(60))
        write(root, f"f{i:02d}.md", f"# File {i}\n\n{body}\n\n## Part two\n\nMore about topic{i} and server{i}.\n")


def bucket_keys(s3, lake) -> list[str]:
    "The keys of the lake's objects: its bucket's, under its prefix if any."
    bucket, _, prefix = lake["MINIRAG_DATA"].removeprefix("s3://").partition("/")
    return s3.keys(bucket, prefix)


def others_untouched(s3, lake):
    "Every object of the bucket is the lake's, under its prefix, or one of the others, as they were put."
    bucket = lake["MINIRAG_DATA"].removeprefix("s3://").partition("/")[0]
    keys = s3.keys(bucket)
    assert set(OTHERS) <= set(keys) and all(k in OTHERS or k.startswith(PREFIX) for k in keys), keys
    assert all(s3.client().get_object(Bucket=bucket, Key=k)["Body"].read() == b"not the lake's" for k in OTHERS)


def test_the_aws_variables_reach_the_bucket_and_status_shows_no_key(lake, s3, tmp_path, model_dir, root):
    notes(root, 3)
    env = machine(lake, tmp_path, model_dir, root, "a")
    r = cli(env, "sync", "--json")
    assert json.loads(r.stdout)["ingested"] == 3
    keys = bucket_keys(s3, lake)
    assert keys and all(k.endswith(".parquet") for k in keys), keys  # the rows are on the bucket
    st = cli(env, "status", "--json")
    got = json.loads(st.stdout)["lake"]
    assert got["data"] == lake["MINIRAG_DATA"] and got["endpoint"] == s3.url, got
    assert got["catalog"].startswith("postgresql://minirag@127.0.0.1:"), got
    for out in (r.stdout + r.stderr, st.stdout + st.stderr, cli(env, "status").stdout):
        assert lake["AWS_SECRET_ACCESS_KEY"] not in out and lake["AWS_ACCESS_KEY_ID"] not in out
    q = cli_json(env, "query", "topic1 server1")
    assert q["results"][0]["source"].endswith("f01.md"), q


def test_the_server_checks_a_listing_under_a_prefix_as_aws_does(prefixed, s3):
    "The right key lists under the prefix (a moto before 5.2.4 refused it); a wrong secret is refused there too."
    bucket = prefixed["MINIRAG_DATA"].removeprefix("s3://").partition("/")[0]
    assert s3.keys(bucket, "team/") == ["team/notes.txt"]
    with pytest.raises(Exception, match="SignatureDoesNotMatch"):
        s3.client(secret="not-the-secret").list_objects_v2(Bucket=bucket, Prefix="team/")


class Silent:
    "A TCP server on loopback that accepts connections and never answers: an endpoint that hangs."

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.held = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.held.append(self.sock.accept())
            except OSError:
                return

    @property
    def url(self):
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once it is closed


@pytest.mark.parametrize(
    "case, words",
    [
        ("wrong secret", ["SignatureDoesNotMatch", "AWS_SECRET_ACCESS_KEY"]),
        ("unknown key", ["InvalidAccessKeyId", "AWS_ACCESS_KEY_ID"]),
        ("missing bucket", ["does not exist", "MINIRAG_DATA"]),
        ("refused endpoint", ["cannot reach", "AWS_ENDPOINT_URL"]),
        ("silent endpoint", ["cannot reach", "AWS_ENDPOINT_URL", "2 s allowed"]),
    ],
)
def test_a_bad_key_bucket_or_endpoint_is_a_clear_error_in_time(lake, tmp_path, monkeypatch, case, words):
    from minirag.lake import LakeStore
    from minirag.store import IndexUnavailableError

    silent = Silent()
    bad = {
        "wrong secret": dict(AWS_SECRET_ACCESS_KEY="not-the-secret"),
        "unknown key": dict(AWS_ACCESS_KEY_ID="AKIANOTAKEY00000000"),
        "missing bucket": dict(MINIRAG_DATA="s3://no-such-bucket/"),
        "refused endpoint": dict(AWS_ENDPOINT_URL=_dead_url()),
        "silent endpoint": dict(AWS_ENDPOINT_URL=silent.url),
    }[case]
    env = dict(lake, MINIRAG_S3_TIMEOUT="2", **bad)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    st = LakeStore(env["MINIRAG_CATALOG"], env["MINIRAG_DATA"], tmp_path / "home" / "index.duckdb")
    t = time.monotonic()
    with pytest.raises(IndexUnavailableError) as e:
        st.exists()  # never an empty index
    assert time.monotonic() - t < 2 * 2 + 3  # two tries of 2 s each against a silent endpoint, and some slack
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    assert lake["AWS_SECRET_ACCESS_KEY"] not in str(e.value)
    silent.sock.close()


def test_an_endpoint_gone_after_the_lake_opened_is_the_same_clear_error(pg, tmp_path, monkeypatch):
    from minirag.lake import LakeStore
    from minirag.store import IndexUnavailableError

    catalog = pg.new_database()
    with S3() as own:  # a server of this test's own, to stop
        for k, v in dict(own.env("gone"), MINIRAG_S3_TIMEOUT="2").items():
            monkeypatch.setenv(k, v)
        writer_store = LakeStore(catalog, "s3://gone/", tmp_path / "w" / "index.duckdb")
        with writer_store.transaction() as con:  # enough rows for a Parquet file on the bucket
            con.execute("INSERT INTO postings SELECT 'term' || i, i, 1 FROM range(5000) t(i)")
        writer_store.close()
        reader = LakeStore(catalog, "s3://gone/", tmp_path / "r" / "index.duckdb")
        assert reader.exists() is False  # opened: the bucket answered
    t = time.monotonic()
    with pytest.raises(IndexUnavailableError) as e:  # the server is gone: the read fails, never an empty result
        with reader.session() as con:
            con.execute("SELECT sum(tf + chunk_id) FROM postings").fetchall()  # a sum reads the file
    assert time.monotonic() - t < 2 * 2 + 3
    assert "the lake's data: cannot reach http://127.0.0.1:" in str(e.value), str(e.value)
    assert "check AWS_ENDPOINT_URL" in str(e.value)


def test_a_wrong_key_stops_a_sync_with_one_line_naming_it(lake, tmp_path, model_dir, root):
    notes(root, 1)
    env = machine(dict(lake, AWS_SECRET_ACCESS_KEY="not-the-secret"), tmp_path, model_dir, root, "a")
    r = cli(env, "sync", ok=False)
    assert r.returncode == 1 and r.stdout.strip() == "", (r.stdout, r.stderr)
    assert "SignatureDoesNotMatch); check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in r.stderr, r.stderr
    assert "not-the-secret" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_two_writers_sync_into_a_lake_under_a_bucket_prefix_while_a_reader_follows(
    prefixed, s3, tmp_path, model_dir, root, monkeypatch
):
    "The lake under `s3://bucket/team/minirag/`, beside the team's other objects, which it leaves as they were."
    from minirag.api import Index

    lake = prefixed
    notes(root, 12)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL"):
        monkeypatch.setenv(k, lake[k])
    env = machine(lake, tmp_path, model_dir, root, "unused")
    cli(env, "ingest", str(root / "f00.md"))  # the lake exists and holds one file before the reader opens it
    reader = Index.open(
        root, db_path=tmp_path / "reader", model_name=str(model_dir), cache_dir=model_dir.parent, env=lake
    )
    assert reader.query("topic0 server0").hits
    procs = [writer(env, root, tmp_path / f"machine{i}", model_dir, rounds=1, seed=i) for i in range(2)]
    seen = set()
    while any(p.poll() is None for p in procs):  # the reader answers while both write
        seen |= {h.source for h in reader.query("topic3 topic7 server5", top_k=20).hits}
        time.sleep(0.5)
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0 and "Traceback" not in err, err[-3000:]
    fresh = Index.open(root, db_path=tmp_path / "last", model_name=str(model_dir), cache_dir=model_dir.parent, env=lake)
    fresh.sync()  # brings back what the writers deleted last
    assert_exact(fresh, root, tmp_path, model_dir)  # every file is one source, exactly as a file index holds it
    # the reader's next query after the commit sees what the writers left
    assert reader.status().chunk_count == fresh.status().chunk_count
    got = {h.source for h in reader.query("topic11 server11", top_k=3).hits}
    assert str(root / "f11.md") in got, got
    reader.close(), fresh.close()
    keys = bucket_keys(s3, lake)
    assert keys and all(k.startswith(PREFIX) and k.endswith(".parquet") for k in keys), keys
    others_untouched(s3, lake)


def test_maintain_merges_on_the_bucket_and_copy_moves_an_index_in_and_out(lake, pg, s3, tmp_path, model_dir, root):
    from minirag.lake import _pg, _pg_query

    env = machine(lake, tmp_path, model_dir, root, "a")
    for i in range(6):  # small commits: small files on the bucket
        write(root, f"n{i}.md", f"# Note {i}\n\nA short note about item{i} " + "and more words " * 40 + "\n")
        cli(env, "ingest", str(root / f"n{i}.md"))
    m = cli_json(env, "maintain")
    assert m["backend"] == "lake" and m["after"]["data_files"] < m["before"]["data_files"], m
    con = _pg(lake["MINIRAG_CATALOG"], "test")
    live = [p for (p,) in _pg_query(con, "SELECT path FROM ducklake_data_file WHERE end_snapshot IS NULL")]
    con.close()
    keys = bucket_keys(s3, lake)
    assert live and all(any(k.endswith(p) for k in keys) for p in live), (live, keys)  # every live file is there
    assert cli_json(env, "query", "item2 note")["results"][0]["source"].endswith("n2.md")
    out = cli_json(env, "copy", "--to", str(tmp_path / "back"))
    assert out["sources"] == 6 and out["chunks"] >= 6, out
    # and in again: the index file into a second lake, on a bucket of its own
    bucket = "other-" + uuid.uuid4().hex[:8]
    other = dict(MINIRAG_CATALOG=pg.new_database(), MINIRAG_DATA=f"s3://{bucket}/", **s3.env(bucket))
    env2 = machine(other, tmp_path, model_dir, root, "b")
    assert cli_json(env2, "copy", "--from", str(tmp_path / "back")) == out
    assert bucket_keys(s3, other)
    assert cli_json(env2, "query", "item2 note")["results"][0]["source"].endswith("n2.md")
    assert cli_json(env2, "sync")["ingested"] == 0  # nothing embedded again


def rewind(catalog: str, hours: int = 2):
    "The lake as it stands `hours` later: its snapshots' times and its files' deletion schedule moved back."
    from minirag.lake import _pg

    con = _pg(catalog, "test clock")
    clocks = (("ducklake_snapshot", "snapshot_time"), ("ducklake_files_scheduled_for_deletion", "schedule_start"))
    for table, col in clocks:
        con.execute("CALL postgres_execute('pg', ?)", [f"UPDATE {table} SET {col} = {col} - interval '{hours} hours'"])
    con.close()


def live_files(catalog: str) -> set[str]:
    "The paths of the data and delete files the lake's current snapshot reads."
    from minirag.lake import _pg, _pg_query

    con = _pg(catalog, "test")
    got = {
        p
        for t in ("ducklake_data_file", "ducklake_delete_file")
        for (p,) in _pg_query(con, f"SELECT path FROM {t} WHERE end_snapshot IS NULL")
    }
    con.close()
    return got


def test_maintain_expires_old_snapshots_and_deletes_their_files_from_the_bucket(
    prefixed, s3, tmp_path, model_dir, root
):
    "Files no snapshot of the last hour reads are deleted from the bucket; the lake answers as before."
    lake, catalog = prefixed, prefixed["MINIRAG_CATALOG"]
    env = machine(lake, tmp_path, model_dir, root, "a")
    for i in range(5):  # small commits: small files on the bucket
        write(root, f"n{i}.md", f"# Note {i}\n\nA short note about item{i} " + "and more words " * 40 + "\n")
        cli(env, "ingest", str(root / f"n{i}.md"))
    write(root, "n0.md", "# Note 0\n\nRewritten: item0 now speaks of apricots " + "and more words " * 40 + "\n")
    cli(env, "ingest", str(root / "n0.md"))  # its old rows deleted: a delete file
    first = set(bucket_keys(s3, lake))
    m = cli_json(env, "maintain")  # merges; every snapshot is younger than an hour, so every file stays
    assert m["after"]["data_files"] < m["before"]["data_files"], m
    merged = set(bucket_keys(s3, lake))
    assert first < merged, (first, merged)
    rewind(catalog)  # two hours later: the old snapshots expire, and the files only they read are due for deletion
    m = cli_json(env, "maintain")
    assert m["after"]["snapshots"] < m["before"]["snapshots"], m
    rewind(catalog)  # two more: deleted
    cli_json(env, "maintain")
    last = set(bucket_keys(s3, lake))
    names = {k.rsplit("/", 1)[-1] for k in last}
    assert names == {p.rsplit("/", 1)[-1] for p in live_files(catalog)}, last  # the files read are there, only they
    assert first - last and not last - merged, (first, merged, last)  # the small files of the commits are gone
    assert cli_json(env, "query", "item2 note")["results"][0]["source"].endswith("n2.md")
    assert cli_json(env, "query", "apricots item0")["results"][0]["source"].endswith("n0.md")
    others_untouched(s3, lake)


def test_a_writer_killed_mid_commit_leaves_a_consistent_lake_on_the_bucket(
    lake, tmp_path, model_dir, root, monkeypatch
):
    from minirag.api import Index

    notes(root, 12)
    env = machine(lake, tmp_path, model_dir, root, "unused")
    before = committed_writes(lake["MINIRAG_CATALOG"])
    p = writer(env, root, tmp_path / "victim", model_dir, rounds=50, seed=3)
    deadline = time.monotonic() + 300
    while committed_writes(lake["MINIRAG_CATALOG"]) <= before + 2:  # a few commits in: the next is under way
        assert p.poll() is None and time.monotonic() < deadline, "the writer never committed"
        time.sleep(0.1)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL"):
        monkeypatch.setenv(k, lake[k])
    ix = Index.open(
        root, db_path=tmp_path / "survivor", model_name=str(model_dir), cache_dir=model_dir.parent, env=lake
    )
    rows_by_source(ix)  # consistent as it stands: no doubled or orphaned rows
    ix.sync()  # and the next sync completes it
    assert_exact(ix, root, tmp_path, model_dir)
    ix.close()


def test_two_http_servers_answer_the_same_tokens_over_one_lake(lake, tmp_path, model_dir, root):
    "Two `serve --http` processes (two machines behind a load balancer): one tokens file, one lake on the bucket."
    import anyio
    from test_http import Served, free_port

    notes(root, 3)
    tokens_file = tmp_path / "shared" / "tokens.json"
    env = {m: machine(lake, tmp_path, model_dir, root, m, MINIRAG_TOKENS_FILE=str(tokens_file)) for m in "ab"}
    cli(env["a"], "sync")
    token = cli(env["a"], "token", "add", "alice", "--rights", "write").stdout.strip()
    bob = cli(env["b"], "token", "add", "bob").stdout.strip()  # on the other machine, into the same file
    servers = []
    for m in "ab":
        Path(env[m]["DB_PATH"]).mkdir(parents=True, exist_ok=True)
        servers.append(Served(env[m], free_port(), {"alice": token, "bob": bob}))
    a, b = servers
    lemon = write(root, "lemon.md", "# Lemon curd\n\nWhisk zesty lemon curd with butter and sugar.\n")

    async def main():
        async with a.client("alice") as ca, b.client("alice") as cb:
            first = await cb.call_tool("query_documents", {"query": "zesty lemon curd", "topK": 3})
            assert not first.is_error and str(lemon) not in json.dumps(first.structured_content)
            r = await ca.call_tool("ingest_file", {"filePath": str(lemon)})
            assert not r.is_error, r.content[0].text
            # the next query through the other server, after the commit, finds it
            q = await cb.call_tool("query_documents", {"query": "zesty lemon curd", "topK": 3})
            assert not q.is_error and q.structured_content["results"][0]["source"] == str(lemon), q.structured_content

    try:
        anyio.run(main)
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
        assert [s.post(init).status_code for s in servers] == [401, 401]  # no token: refused by both
        assert [s.post(init, s.auth("alice")).status_code for s in servers] == [200, 200]
        cli(env["b"], "token", "revoke", "alice")  # revoked on one machine: refused by both at once
        assert [s.post(init, s.auth("alice")).status_code for s in servers] == [401, 401]
        assert [s.post(init, s.auth("bob")).status_code for s in servers] == [200, 200]
    finally:
        for s in servers:
            s.stop()
    for s in servers:
        assert "Traceback" not in Path(s.log.name).read_text()
