"""Several writers on one lake, each a process with its own home and caches (a stand-in for a machine: they share
only the PostgreSQL catalog and the data path): concurrent ingests, re-ingests and deletes of overlapping files, a
write lock they take turns at, a sync lock that spans them and names its holder, a writer killed with SIGKILL while
it writes, and a process whose lake connection DuckDB invalidated that still exits cleanly."""

import json, os, random, signal, socket, subprocess, sys, textwrap, threading, time
from pathlib import Path
import pytest
from conftest import need_tool, write
from pg import need_team_extra

REPO = Path(__file__).resolve().parents[1]

WRITER = textwrap.dedent(r"""
    import json, sys
    from minirag.api import Index
    from minirag.config import MiniragError
    root, home, model, rounds, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    import random
    rnd = random.Random(seed)
    ix = Index.open(root, db_path=home, model_name=model, cache_dir=str(__import__("pathlib").Path(model).parent))
    files = sorted(str(p) for p in __import__("pathlib").Path(root).glob("*.md"))
    for r in range(rounds):
        for f in rnd.sample(files, 4):
            ix.ingest(f)
        try:
            ix.delete(rnd.choice(files))
        except MiniragError as e:  # another writer deleted it first
            assert "is not in the index" in str(e), e
        if r % 2:
            from minirag.api import ingest_paths
            ingest_paths(ix, rnd.sample(files, 5))   # several files in one batch, one commit
    print(json.dumps({"done": rounds}), flush=True)
""")


@pytest.fixture(scope="module")
def pg():
    need_tool("postgresql")
    need_team_extra()
    from pg import Postgres

    with Postgres() as server:
        yield server


@pytest.fixture
def team(pg, tmp_path, model_dir, root):
    "Twelve files on the shared drive and the environment of one machine of the team."
    for i in range(12):
        body = " ".join(f"word{(i * 7 + j) % 40} topic{i}" for j in range(60))
        write(root, f"f{i:02d}.md", f"# File {i}\n\n{body}\n\n## Part two\n\nMore about topic{i} and server{i}.\n")
    env = dict(
        os.environ, MINIRAG_CATALOG=pg.new_database(), MINIRAG_DATA=str(tmp_path / "lake-data"), PYTHONPATH=str(REPO)
    )
    return env


def writer(env, root, home, model_dir, rounds, seed, **kw):
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), str(home), str(model_dir), str(rounds), str(seed)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def open_index(env, root, home, model_dir):
    from minirag.api import Index

    return Index.open(
        root,
        db_path=home,
        model_name=str(model_dir),
        cache_dir=model_dir.parent,
        env={k: env[k] for k in ("MINIRAG_CATALOG", "MINIRAG_DATA")},
    )


def rows_by_source(ix) -> dict:
    "source -> [(chunk_index, text, sorted postings)] of one index, read through its own connection."
    with ix.store.session() as con:
        chunks = con.execute("SELECT id, source, chunk_index, text FROM chunks ORDER BY source, chunk_index").fetchall()
        posts = {}
        for term, cid, tf in con.execute("SELECT term, chunk_id, tf FROM postings").fetchall():
            posts.setdefault(cid, []).append((term, tf))
        ids = [c[0] for c in chunks]
        assert len(ids) == len(set(ids)), "a chunk id is used twice"
        orphans = set(posts) - set(ids)
        assert not orphans, f"{len(orphans)} chunks' postings outlived them"
        srcs = con.execute("SELECT source, chunk_count FROM sources").fetchall()
    names = [s for s, _ in srcs]
    assert len(names) == len(set(names)), "a source is recorded twice"
    out = {}
    for cid, s, i, text in chunks:
        out.setdefault(s, []).append((i, text, sorted(posts.get(cid, []))))
    for s, n in srcs:
        assert [i for i, *_ in out.get(s, [])] == list(range(n)), f"{s}: chunks {out.get(s)} for a count of {n}"
    assert set(out) <= set(names), "chunks of a source the index does not list"
    return out


def assert_exact(lake_ix, root, tmp_path, model_dir):
    "The lake holds every file exactly once, with exactly the chunks and postings a file index gets from it."
    from minirag.api import Index

    ref = Index.open(root, db_path=tmp_path / "reference", model_name=str(model_dir), cache_dir=model_dir.parent)
    ref.sync()
    want, got = rows_by_source(ref), rows_by_source(lake_ix)
    assert sorted(got) == sorted(want) == sorted(str(p) for p in root.glob("*.md"))
    for s in want:
        assert got[s] == want[s], s
    ref.close()


def test_concurrent_writers_leave_each_file_exactly_once(team, root, tmp_path, model_dir):
    procs = [writer(team, root, tmp_path / f"machine{i}", model_dir, rounds=3, seed=i) for i in range(3)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and json.loads(out.splitlines()[-1]) == {"done": 3}, err[-3000:]
        assert "Traceback" not in err and "conflict" not in err.lower(), err[-3000:]
    ix = open_index(team, root, tmp_path / "machine9", model_dir)
    ix.sync()  # brings back what the writers deleted last
    assert_exact(ix, root, tmp_path, model_dir)
    ix.close()


def test_sync_lock_spans_processes_and_names_its_holder(team, root, tmp_path, model_dir):
    env = dict(
        team,
        MINIRAG_TEST_PAUSE_AT="scanned",
        MINIRAG_TEST_PAUSE_SECONDS="60",
        BASE_DIR=str(root),
        DB_PATH=str(tmp_path / "a"),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
    )
    holder = subprocess.Popen([sys.executable, "-m", "minirag.cli", "sync"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while "minirag-test-paused scanned" not in line:
            line = holder.stderr.readline()
            assert line or holder.poll() is None, "the holder ended before pausing"
        env_b = dict(env, DB_PATH=str(tmp_path / "b"))
        env_b.pop("MINIRAG_TEST_PAUSE_AT")
        r = subprocess.run(
            [sys.executable, "-m", "minirag.cli", "sync"], env=env_b, capture_output=True, text=True, timeout=120
        )
        assert r.returncode != 0 and "another sync is already running" in r.stderr, r.stderr
        assert f"{socket.gethostname()} pid {holder.pid}" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
    # the holder died: the server dropped its lock with its session
    r = subprocess.run(
        [sys.executable, "-m", "minirag.cli", "sync", "--json"], env=env_b, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0 and json.loads(r.stdout)["ingested"] == 12, r.stderr


def committed_writes(catalog: str) -> int:
    "The lake's newest snapshot id once a chunk was ever written (0 before: the layout's commits do not count)."
    import duckdb
    from minirag.lake import _pg, _pg_query

    con = _pg(catalog, "test watcher")
    try:
        return _pg_query(
            con,
            "SELECT coalesce(max(snapshot_id), 0) FROM ducklake_snapshot "
            "WHERE EXISTS (SELECT 1 FROM ducklake_table WHERE table_name = 'chunks')",
        )[0][0]
    except duckdb.Error:  # the catalog's own tables are not there yet
        return 0
    finally:
        con.close()


def test_a_writer_killed_while_writing_leaves_a_consistent_lake(team, root, tmp_path, model_dir):
    rnd = random.Random(7)
    for k in range(2):
        before = committed_writes(team["MINIRAG_CATALOG"])
        p = writer(team, root, tmp_path / "victim", model_dir, rounds=50, seed=k)
        deadline = time.monotonic() + 300
        while committed_writes(team["MINIRAG_CATALOG"]) <= before:  # its model loaded, its first write committed
            assert p.poll() is None and time.monotonic() < deadline, "the writer never committed"
            time.sleep(0.2)
        time.sleep(rnd.uniform(1, 4))  # in the middle of its writes
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=60)
        assert p.returncode == -signal.SIGKILL
    ix = open_index(team, root, tmp_path / "survivor", model_dir)
    rows_by_source(ix)  # consistent as it stands: no doubled or orphaned rows
    ix.sync()  # and the next sync completes it
    assert_exact(ix, root, tmp_path, model_dir)
    ix.close()


@pytest.fixture(scope="module")
def pg_russian():
    "A server whose messages are in Russian: DuckLake's own retry matches English text only, ours does not."
    need_tool("postgresql")
    need_team_extra()
    from pg import Postgres

    import shutil, tempfile

    loc = Path(
        tempfile.mkdtemp(prefix="minirag-locale-")
    )  # the server's user must read it: not under pytest's 0700 tmp
    r = subprocess.run(["localedef", "-i", "ru_RU", "-f", "UTF-8", str(loc / "ru_RU.UTF-8")], capture_output=True)
    if r.returncode != 0 or not (loc / "ru_RU.UTF-8").is_dir():
        pytest.skip("the ru_RU.UTF-8 locale cannot be compiled here (localedef found no ru_RU source)")
    subprocess.run(["chmod", "-R", "a+rX", str(loc)], check=True)
    with Postgres(settings={"lc_messages": "ru_RU.UTF-8"}, env={"LOCPATH": str(loc)}) as server:
        yield server
    shutil.rmtree(loc, ignore_errors=True)


def test_conflicts_are_retried_when_the_server_speaks_russian(pg_russian, tmp_path, model_dir, root):
    import duckdb
    from minirag.lake import lake_extension

    url = pg_russian.new_database()
    con = duckdb.connect(config=dict(allow_unsigned_extensions=True, autoload_known_extensions=False))
    con.execute(f"LOAD '{lake_extension('postgres_scanner')}'")
    con.execute(f"ATTACH '{url}' AS pg (TYPE postgres)")
    with pytest.raises(duckdb.Error, match="деление на ноль"):  # the server really answers in Russian
        con.execute("SELECT * FROM postgres_query('pg', 'SELECT 1/0')").fetchall()
    con.close()
    for i in range(12):
        write(root, f"f{i:02d}.md", f"# File {i}\n\nтекст номер {i} про сервер{i}.\n")
    env = dict(os.environ, MINIRAG_CATALOG=url, MINIRAG_DATA=str(tmp_path / "lake-data"), PYTHONPATH=str(REPO))
    procs = [writer(env, root, tmp_path / f"m{i}", model_dir, rounds=2, seed=i) for i in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0 and "Traceback" not in err, err[-3000:]
    ix = open_index(env, root, tmp_path / "m9", model_dir)
    ix.sync()
    assert_exact(ix, root, tmp_path, model_dir)
    ix.close()


def test_writers_take_turns_at_the_write_lock(pg, tmp_path):
    "A write that starts while another is open waits for its commit, then commits once: no race, no retry."
    import minirag.lake as lake
    from minirag.lake import LakeStore, _pg, _pg_query
    from minirag.tables import Tables

    url = pg.new_database()
    a, b = (LakeStore(url, str(tmp_path / "data"), tmp_path / h / "index.duckdb") for h in ("a", "b"))
    Tables(a).set_meta(n=0)
    tries, done = [], threading.Event()
    real = b.transaction

    def counted():
        tries.append(1)
        return real()

    b.transaction = counted
    with a.transaction() as con:  # a's write is open: it rewrote the meta row b rewrites too
        con.execute("DELETE FROM meta WHERE key = 'n'")
        con.execute("INSERT INTO meta VALUES ('n', 'a')")
        t = threading.Thread(target=lambda: (Tables(b).set_meta(n="b"), done.set()))
        t.start()
        watch = _pg(url, "test watcher")
        waiting = []
        for _ in range(100):  # b's lock session shows in the server's lock table, not granted
            waiting = _pg_query(
                watch,
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = %d "
                "AND objid = %d" % lake._WRITE_KEY,
            )
            if waiting[0][0]:
                break
            time.sleep(0.1)
        watch.close()
        assert waiting[0][0] == 1, "the second writer is not waiting for the write lock"
        assert not done.is_set()
    t.join(60)
    assert done.is_set() and len(tries) == 1  # it committed on its first try, after a's commit
    assert Tables(a).meta()["n"] == "b"
    a.close()
    b.close()


def test_a_write_lock_held_too_long_is_a_clear_error(pg, tmp_path, monkeypatch):
    import minirag.lake as lake
    from minirag.lake import LakeStore, LakeWriteBusyError
    from minirag.tables import Tables

    url = pg.new_database()
    a, b = (LakeStore(url, str(tmp_path / "data"), tmp_path / h / "index.duckdb") for h in ("a", "b"))
    Tables(a).set_meta(n=0)
    Tables(b).meta()  # b has opened the lake: its wait below is for the lock alone
    monkeypatch.setattr(lake, "WRITE_LOCK_WAIT", 1)
    with a.session(), a.write_lock():
        with pytest.raises(LakeWriteBusyError) as e:
            Tables(b).set_meta(n=1)
    assert f"{socket.gethostname()} pid {os.getpid()}, running for" in str(e.value), e.value
    assert "try again when its write" in str(e.value)
    Tables(b).set_meta(n=2)  # the lock is free again
    assert Tables(a).meta()["n"] == "2"
    a.close()
    b.close()


INVALIDATED = textwrap.dedent(r"""
    import itertools, sys
    from pathlib import Path
    import minirag.lake as lake
    from minirag import store
    from minirag.lake import LakeStore
    from minirag.tables import Tables

    catalog, folder = sys.argv[1], Path(sys.argv[2])
    # each lake connection gets a database file of its own as its main database, so that DuckDB's switch for a
    # checkpoint that dies can invalidate it (a lake's main database is in memory, which never checkpoints)
    n = itertools.count()
    lake.connect = lambda path, **kw: store.connect(folder / f"main{next(n)}.duckdb", **kw)
    st = LakeStore(catalog, str(folder / "data"), folder / "home" / "index.duckdb")
    Tables(st).set_meta(probe="before")
    try:
        with st.transaction() as con:
            con.execute("DELETE FROM meta WHERE key = 'probe'")  # a DuckLake transaction is open on `con`
            side = con.cursor()  # another client of the same database, which it invalidates
            side.execute("CREATE TABLE main0.side(i INT)")
            side.execute("SET debug_checkpoint_abort = 'before_header'")
            side.execute("SET checkpoint_threshold = '1B'")
            try:
                side.execute("INSERT INTO main0.side SELECT range FROM range(1000)")
            except Exception as e:
                print("invalidated:", type(e).__name__, file=sys.stderr)
    except Exception as e:
        print("the write failed:", type(e).__name__, file=sys.stderr)
    Tables(st).set_meta(probe="after")  # on a fresh connection
    print(Tables(st).meta()["probe"], len(lake.invalidated), flush=True)
""")


def test_a_process_whose_lake_connection_was_invalidated_exits_cleanly(pg, tmp_path):
    "DuckDB invalidates a lake connection inside a write; the process goes on, and exits without aborting."
    r = subprocess.run(
        [sys.executable, "-c", INVALIDATED, pg.new_database(), str(tmp_path)],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "invalidated: FatalException" in r.stderr, r.stderr[-3000:]  # the connection really was invalidated
    assert "the write failed: CommitConflict" in r.stderr, r.stderr[-3000:]
    assert "terminate called" not in r.stderr, r.stderr[-3000:]
    assert r.returncode == 0 and r.stdout.split() == ["after", "1"], (r.returncode, r.stdout, r.stderr[-3000:])
