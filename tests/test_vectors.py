"The per-process vector matrix (issue 16): compact above a size, exact for scopes, refreshed in place after writes."

import numpy as np, pytest
from minirag.store import Store
from minirag.feeds import Feeds
from minirag.tables import Tables, SourceRecord
import minirag.vectors.held as V
import minirag.vectors.snapshot as S

DIM = 384


def _add(store, rng, name, n):
    v = rng.standard_normal((n, DIM)).astype(np.float32) + 0.3  # an offset, as real embeddings share a mean direction
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    rows = [
        dict(
            chunk_index=i,
            parent_id=str(i // 4),
            text=f"chunk {i} of {name}",
            prefix_len=0,
            section_head="",
            kind="text",
            tokens=3,
            scheme=1,
        )
        for i in range(n)
    ]
    Tables(store).write_batch([(SourceRecord(f"/docs/{name}"), rows, v)], "test-model")


@pytest.fixture()
def store(tmp_path):
    s, rng = Store(tmp_path / "index.duckdb"), np.random.default_rng(7)
    for i in range(40):
        _add(s, rng, f"{'a' if i < 4 else 'b'}/doc{i:02d}.md", 30)
    yield s
    s.close()


def _exact(con, q, k, prefix=None, c=0.0):
    "Ground truth from DuckDB itself: array_cosine_distance, blended with the source's first chunk, ties by id."
    w = "WHERE starts_with(source, ?)" if prefix else ""
    sql = f"""WITH d AS (SELECT id, source, chunk_index, array_cosine_distance(emb, ?::FLOAT[{DIM}]) AS d
        FROM chunks {w}),
              h AS (SELECT source, arg_min(d, chunk_index) AS hd FROM d GROUP BY source)
              SELECT id FROM d JOIN h USING (source) ORDER BY (1 - {c}) * d + {c} * hd, id LIMIT {k}"""
    return [r[0] for r in con.execute(sql, [q.tolist()] + ([prefix] if prefix else [])).fetchall()]


def _queries(n=8):
    q = np.random.default_rng(3).standard_normal((n, DIM)).astype(np.float32) + 0.3
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def test_compact_matrix_is_exact_for_scopes_and_small_in_memory(store):
    with store.session() as con:
        vm = V.vectors(con, "compact", compact_above=0)
        assert vm.compact and vm.n == 1200
        for q in _queries():
            for c in (0.0, 0.3):
                assert [i for i, _ in vm.search(q, 10, ["/docs/a"], c)] == _exact(con, q, 10, "/docs/a/", c)
                assert [i for i, _ in vm.search(q, 10, None, c)] == _exact(
                    con, q, 10, None, c
                )  # 1,200 rows: all are candidates
    per_row = (vm.q8[: vm.n].nbytes + vm.scale[: vm.n].nbytes + vm.bits[:, : vm.n].nbytes) / vm.n
    assert per_row <= DIM + 64, per_row  # float32 would be 4 × 384 = 1,536 bytes a row


def test_writes_refresh_the_matrix_in_place(store, tmp_path):
    rng = np.random.default_rng(11)
    for compact in (False, True):
        key = f"refresh-{compact}"
        with store.session() as con:
            vm = V.vectors(con, key, compact_above=0 if compact else 10**9)
        _add(store, rng, "a/doc01.md", 12)  # re-ingest: fewer chunks, new vectors
        _add(store, rng, "c/new.md", 7)
        Tables(store).delete("/docs/b/doc30.md")
        Tables(store).rename("/docs/b/doc31.md", "/docs/d/doc31.md", "/docs")
        with store.session() as con:
            assert V.vectors(con, key) is vm  # followed the writes without a full reload
            assert int(vm.alive[: vm.n].sum()) == con.execute("SELECT count(*) FROM chunks").fetchone()[0]
            for q in _queries(4):
                assert [i for i, _ in vm.search(q, 10, None, 0.3)] == _exact(con, q, 10, None, 0.3)
                assert [i for i, _ in vm.search(q, 10, ["/docs/d"])] == _exact(con, q, 10, "/docs/d/")
                assert [i for i, _ in vm.search(q, 5, ["/docs/c/new.md"])] == _exact(con, q, 5, "/docs/c/new.md")
            assert vm.search(q, 5, ["/docs/b/doc30.md"]) == []


def test_one_question_processes_scan_in_duckdb(store, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    q = _queries(1)[0]
    with store.session() as con:
        raw = {}
        got = V.nearest(con, "one-shot", q, 10, ["/docs/a"], 0.3, raw)
        assert "one-shot" not in V._cache
        assert [i for i, _ in got] == _exact(con, q, 10, "/docs/a/", 0.3)
        own = dict(
            con.execute(f"SELECT id, array_cosine_distance(emb, ?::FLOAT[{DIM}]) FROM chunks", [q.tolist()]).fetchall()
        )
        assert all(abs(raw[i] - own[i]) < 1e-6 for i, _ in got)
        V.nearest(con, "one-shot", q, 10)  # a second question: now the process keeps a matrix
        assert "one-shot" in V._cache


# ---- the snapshot a one-shot process keeps beside the index (06a1_snapshot) ------------------------------------------


def _one_shot(store, q, k=10, bases=None, c=0.0):
    "What a new CLI process does: no matrix held, nothing asked yet."
    key = str(store.db_file)
    V._cache.pop(key, None)
    V._asked.discard(key)
    with store.session() as con:
        return [i for i, _ in V.nearest(con, key, q, k, bases, c)]


def test_a_one_shot_process_keeps_a_snapshot_that_follows_every_write(store, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    snap, rng, qs = V.snapshot_path(str(store.db_file)), np.random.default_rng(5), _queries(4)
    assert not snap.exists()
    with store.session() as con:
        assert _one_shot(store, qs[0], c=0.3) == _exact(con, qs[0], 10, None, 0.3)
    assert snap.exists() and snap.stat().st_mode & 0o777 == store.db_file.stat().st_mode & 0o777
    saved = snap.stat().st_mtime_ns
    _one_shot(store, qs[1])
    assert snap.stat().st_mtime_ns == saved  # unchanged index: read, not written
    _add(store, rng, "a/doc01.md", 12)  # re-ingest: fewer chunks, new vectors
    _add(store, rng, "c/new.md", 7)
    Tables(store).delete("/docs/b/doc30.md")
    Tables(store).rename("/docs/b/doc31.md", "/docs/d/doc31.md", "/docs")
    with store.session() as con:
        for q in qs:
            assert _one_shot(store, q, c=0.3) == _exact(con, q, 10, None, 0.3)
            assert _one_shot(store, q, 5, ["/docs/c/new.md"]) == _exact(con, q, 5, "/docs/c/new.md")
            assert _one_shot(store, q, 10, ["/docs/d"]) == _exact(con, q, 10, "/docs/d/")
            assert _one_shot(store, q, 5, ["/docs/b/doc30.md"]) == []
            assert _one_shot(store, q, 5, ["/docs/b/doc31.md"]) == []
    assert snap.stat().st_mtime_ns != saved  # brought up to date once, and saved for the next process
    assert not list(snap.parent.glob(".vectors-*"))


def test_a_snapshot_of_another_index_or_a_damaged_one_is_never_trusted(store, tmp_path, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    other = Store(tmp_path / "other" / "index.duckdb")
    rng = np.random.default_rng(9)
    for i in range(40):
        _add(other, rng, f"{'a' if i < 4 else 'b'}/doc{i:02d}.md", 30)  # same names and sizes, other vectors
    q, snap = _queries(1)[0], V.snapshot_path(str(store.db_file))
    _one_shot(other, q)
    good = lambda: _exact(con, q, 10, None, 0.3)
    damaged = [
        V.snapshot_path(str(other.db_file)).read_bytes(),
        b"",
        b"minirag vectors 1\n" + b"\xff" * 100,
        b"not a snapshot at all",
    ]
    whole = damaged[0]
    damaged += [
        whole[: len(whole) // 2],
        whole.replace(b'"dim": 384', b'"dim": 385', 1),
        whole.replace(b'"<f4"', b'"|O8"', 1),
        whole.replace(S.MAGIC, b"minirag vectors 1\n", 1),
    ]  # the first version's files: loaded anew, never read
    with store.session() as con:
        for bad in damaged:
            snap.write_bytes(bad)
            assert _one_shot(store, q, c=0.3) == good()
            assert S.read(snap, DIM, False) is not None  # replaced by one of this index
    other.close()


def test_a_snapshot_that_cannot_be_written_still_answers(store, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    snap = V.snapshot_path(str(store.db_file))
    snap.mkdir()  # in the way: neither readable as a file nor replaceable
    q = _queries(1)[0]
    with store.session() as con:
        for _ in range(2):
            assert _one_shot(store, q) == _exact(con, q, 10)
    assert snap.is_dir() and not list(snap.parent.glob(".vectors-*"))


def test_above_the_compact_size_one_shot_processes_scan(store, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    monkeypatch.setattr(V, "COMPACT_ABOVE", 100)  # a snapshot would be the full float32 matrix: 1.5 GB at 1M chunks
    q = _queries(1)[0]
    with store.session() as con:
        assert _one_shot(store, q, 10, ["/docs/a"]) == _exact(con, q, 10, "/docs/a/")
    assert not V.snapshot_path(str(store.db_file)).exists() and str(store.db_file) not in V._cache


# ---- a process that keeps its matrix (the MCP server) starts from the snapshot and keeps it current ------------------


def _holding(store, q, k=10, bases=None, c=0.0):
    "What a new server process does: no matrix yet; it keeps the one it gets (its snapshot write waited for)."
    key = str(store.db_file)
    V._cache.pop(key, None)
    V._asked.discard(key)
    return _ask(store, q, k, bases, c)


def _ask(store, q, k=10, bases=None, c=0.0):
    key = str(store.db_file)
    with store.session() as con:
        got = [i for i, _ in V.nearest(con, key, q, k, bases, c)]
    t = V._saving.pop(key, None)
    if t:
        t.join()
    return got


def _loads(monkeypatch):
    "Count the reads of rows from DuckDB (a full load reads every source; a refresh only the changed ones)."
    seen, real = [], V.VectorMatrix.load

    def load(self, con, sources=None, stamps=None):
        seen.append(None if sources is None else len(sources))
        return real(self, con, sources, stamps)

    monkeypatch.setattr(V.VectorMatrix, "load", load)
    return seen


def test_a_server_starts_from_the_snapshot_and_keeps_it_current(store, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "1")
    key, snap, rng, qs = str(store.db_file), V.snapshot_path(str(store.db_file)), np.random.default_rng(4), _queries(4)
    seen = _loads(monkeypatch)
    with store.session() as con:
        assert _holding(store, qs[0], c=0.3) == _exact(con, qs[0], 10, None, 0.3)
    assert seen == [None] and snap.exists()  # no snapshot: one full load, then one written for the next process
    seen.clear()
    with store.session() as con:
        assert _holding(store, qs[1]) == _exact(con, qs[1], 10)
    assert seen == [] and isinstance(V._cache[key].f32, np.memmap)  # the next start: the snapshot, nothing read
    _add(store, rng, "c/new.md", 7)  # a write while it holds the matrix
    Tables(store).delete("/docs/b/doc30.md")
    with store.session() as con:
        assert _ask(store, qs[2], 5, ["/docs/c/new.md"]) == _exact(con, qs[2], 5, "/docs/c/new.md")
        assert _ask(store, qs[2], 5, ["/docs/b/doc30.md"]) == []
    assert seen == [1]  # followed in place: the new source only
    seen.clear()
    with store.session() as con:
        for q in qs:  # a start after the write: the snapshot was kept current, nothing read from DuckDB
            assert _holding(store, q, c=0.3) == _exact(con, q, 10, None, 0.3)
    assert seen == []
    assert not list(snap.parent.glob(".vectors-*"))


def test_a_server_never_trusts_a_foreign_or_damaged_snapshot(store, tmp_path, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "1")
    other = Store(tmp_path / "other" / "index.duckdb")
    rng = np.random.default_rng(9)
    for i in range(40):
        _add(other, rng, f"{'a' if i < 4 else 'b'}/doc{i:02d}.md", 30)  # same names and sizes, other vectors
    q, snap = _queries(1)[0], V.snapshot_path(str(store.db_file))
    _holding(other, q)
    whole = V.snapshot_path(str(other.db_file)).read_bytes()
    damaged = [
        whole,
        b"",
        b"minirag vectors 1\n" + b"\xff" * 100,
        whole[: len(whole) // 2],
        whole.replace(b'"dim": 384', b'"dim": 385', 1),
    ]
    seen = _loads(monkeypatch)
    with store.session() as con:
        for bad in damaged:
            snap.write_bytes(bad)
            seen.clear()
            assert _holding(store, q, c=0.3) == _exact(con, q, 10, None, 0.3)
            assert seen[-1] is None  # ends in a full load from DuckDB
            assert S.read(snap, DIM, False) is not None  # replaced by one of this index
    other.close()


# ---- a write leaves a small delta beside the snapshot, not a new snapshot --------------------------------------------


def _state(snap):
    st = snap.stat()
    return st.st_ino, st.st_size


def test_a_write_leaves_a_delta_and_the_next_process_reads_nothing_from_duckdb(store, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    snap, rng, qs = V.snapshot_path(str(store.db_file)), np.random.default_rng(21), _queries(4)
    _one_shot(store, qs[0])
    ino, size = _state(snap)
    assert not S.delta_path(snap).exists()
    _add(store, rng, "c/new.md", 7)  # adds, a delete, a re-ingest (its old rows dead, new rows added) and a rename
    Tables(store).delete("/docs/b/doc30.md")
    _add(store, rng, "a/doc01.md", 12)
    Tables(store).rename("/docs/b/doc31.md", "/docs/d/doc31.md", "/docs")
    with store.session() as con:
        assert _one_shot(store, qs[0], c=0.3) == _exact(con, qs[0], 10, None, 0.3)
    new_rows = 7 + 12 + 30  # the renamed source's rows are read again under its new name
    assert _state(snap) == (ino, size)  # the same file: the new rows went into its room
    assert S.delta_path(snap).stat().st_size < 2000
    seen = _loads(monkeypatch)
    with store.session() as con:
        for q in qs:
            assert _one_shot(store, q, c=0.3) == _exact(con, q, 10, None, 0.3)
            assert _one_shot(store, q, 5, ["/docs/c/new.md"]) == _exact(con, q, 5, "/docs/c/new.md")
            assert _one_shot(store, q, 10, ["/docs/d"]) == _exact(con, q, 10, "/docs/d/")
            assert _one_shot(store, q, 5, ["/docs/b/doc30.md"]) == [] == _one_shot(store, q, 5, ["/docs/b/doc31.md"])
    assert seen == []  # snapshot + delta were current: no row read from DuckDB
    vm = S.read(snap, DIM, False)
    with store.session() as con:
        assert int(vm.alive[: vm.n].sum()) == con.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert isinstance(vm.f32, np.memmap) and vm.n == 1200 + new_rows
    assert not list(snap.parent.glob(".vectors-*"))


def test_a_damaged_foreign_or_older_delta_is_never_trusted(store, tmp_path, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    snap, rng, q = V.snapshot_path(str(store.db_file)), np.random.default_rng(22), _queries(1)[0]
    other = Store(tmp_path / "other" / "index.duckdb")
    for i in range(40):
        _add(other, rng, f"{'a' if i < 4 else 'b'}/doc{i:02d}.md", 30)  # same names and sizes
    _one_shot(other, q)
    _add(other, rng, "c/new.md", 7)
    Tables(other).delete("/docs/b/doc30.md")
    _one_shot(other, q)
    foreign = S.delta_path(V.snapshot_path(str(other.db_file))).read_bytes()
    _one_shot(store, q)
    base = snap.read_bytes()
    _add(store, rng, "c/new.md", 7)
    Tables(store).delete("/docs/b/doc30.md")
    _one_shot(store, q)
    good, grown = S.delta_path(snap).read_bytes(), snap.read_bytes()
    assert len(grown) == len(base)  # the new rows went into the room
    row = S.read(snap, DIM, False).snap.at["f32"] + 1203 * DIM * 4  # one of the rows the delta names
    older = S.read(snap, DIM, False)
    assert S.write(older, snap)  # a new snapshot: the delta is older
    assert not S.delta_path(snap).exists()
    newer = snap.read_bytes()
    flip = lambda b, i: b[:i] + bytes([b[i] ^ 0x40]) + b[i + 1 :]
    cases = [
        (grown, good[: len(good) // 2]),
        (grown, flip(good, len(good) - 3)),
        (grown, flip(good, 60)),
        (flip(grown, row + 5), good),  # one of the rows the delta names
        (grown, foreign),
        (grown, b"minirag vectors delta 1\n" + b"\xff" * 40),
    ]
    seen = _loads(monkeypatch)
    with store.session() as con:
        for whole, delta in cases:
            snap.write_bytes(whole)
            S.delta_path(snap).write_bytes(delta)
            assert S.read(snap, DIM, False).n == 1200  # the snapshot alone, as written before the write
            seen.clear()
            assert _one_shot(store, q, c=0.3) == _exact(con, q, 10, None, 0.3)
            assert _one_shot(store, q, 5, ["/docs/b/doc30.md"]) == []
            assert seen == [1]  # the snapshot was stale: the new source read from DuckDB
        snap.write_bytes(newer)
        S.delta_path(snap).write_bytes(good)  # a current snapshot, the delta it replaced
        _add(store, rng, "c/later.md", 5)
        assert S.read(snap, DIM, False).n == 1207  # the old delta is not applied to the newer snapshot
        seen.clear()
        assert _one_shot(store, q, 5, ["/docs/c/later.md"]) == _exact(con, q, 5, "/docs/c/later.md")
        assert seen == [1]
    other.close()


def test_many_deltas_are_folded_into_a_new_snapshot(store, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    snap, rng, q = V.snapshot_path(str(store.db_file)), np.random.default_rng(23), _queries(1)[0]
    _one_shot(store, q)
    ino, folds = _state(snap)[0], []
    for i in range(12):  # 12 writes of 20 rows and one delete each: past 1/8 of 1,200 rows a new snapshot is written
        _add(store, rng, f"e/new{i:02d}.md", 20)
        Tables(store).delete(f"/docs/b/doc{10 + i:02d}.md")
        with store.session() as con:
            assert _one_shot(store, q, c=0.3) == _exact(con, q, 10, None, 0.3)
        vm = S.read(snap, DIM, False)
        assert vm.n - vm.snap.nb <= vm.snap.nb // S.FOLD_SHARE
        if _state(snap)[0] != ino:
            folds.append(i)
            ino = _state(snap)[0]
            assert not S.delta_path(snap).exists()
        else:
            assert S.delta_path(snap).exists()
    assert len(folds) in (1, 2), folds
    with store.session() as con:
        assert int(vm.alive[: vm.n].sum()) == con.execute("SELECT count(*) FROM chunks").fetchone()[0]


def test_a_server_keeps_a_delta_too(store, monkeypatch):
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "1")
    key, snap, rng, qs = str(store.db_file), V.snapshot_path(str(store.db_file)), np.random.default_rng(24), _queries(2)
    _holding(store, qs[0])
    _holding(store, qs[0])  # from the snapshot: its rows mapped
    ino, size = _state(snap)
    _add(store, rng, "c/new.md", 7)
    with store.session() as con:
        assert _ask(store, qs[1], 5, ["/docs/c/new.md"]) == _exact(con, qs[1], 5, "/docs/c/new.md")
    assert _state(snap) == (ino, size) and S.delta_path(snap).exists()  # its new rows in the file's room
    seen = _loads(monkeypatch)
    with store.session() as con:
        assert _holding(store, qs[1], c=0.3) == _exact(con, qs[1], 10, None, 0.3)
    assert seen == []


# ---- above the compact size: a holding process leaves a compact snapshot that one-shot processes map -----------------


def test_a_compact_snapshot_serves_one_shot_processes_while_current(store, tmp_path, monkeypatch):
    monkeypatch.setattr(V, "COMPACT_ABOVE", 100)
    key, snap, rng, qs = str(store.db_file), V.snapshot_path(str(store.db_file)), np.random.default_rng(25), _queries(3)
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "1")
    with store.session() as con:
        assert _holding(store, qs[0], c=0.3) == _exact(con, qs[0], 10, None, 0.3)
    assert V._cache[key].compact and S.read(snap, DIM, True).n == 1200 and S.read(snap, DIM, False) is None
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    seen = _loads(monkeypatch)
    Tables(store).delete("/docs/b/doc30.md")  # behind by a delete only: still served, the dead rows masked
    with store.session() as con:
        for q in qs:
            assert _one_shot(store, q, c=0.3) == _exact(con, q, 10, None, 0.3)
            assert V._cache[key].mapped
            assert _one_shot(store, q, 10, ["/docs/a"]) == _exact(con, q, 10, "/docs/a/")
            assert _one_shot(store, q, 5, ["/docs/b/doc30.md"]) == []
    assert seen == []
    ino, size = _state(snap)
    _add(store, rng, "c/new.md", 7)  # rows it lacks: the next one-shot process reads only those, into the file's room
    with store.session() as con:
        assert _one_shot(store, qs[0], 5, ["/docs/c/new.md"]) == _exact(con, qs[0], 5, "/docs/c/new.md")
        assert seen == [1] and V._cache[key].mapped and _state(snap) == (ino, size)  # not rewritten: a small delta
        assert S.read(snap, DIM, True).n == 1207 and S.delta_path(snap).exists()
        for q in qs:  # the one after it reads nothing from DuckDB
            assert _one_shot(store, q, c=0.3) == _exact(con, q, 10, None, 0.3)
            assert _one_shot(store, q, 5, ["/docs/c/new.md"]) == _exact(con, q, 5, "/docs/c/new.md")
    assert seen == [1] and V._cache[key].mapped
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "1")  # a server starts from it too
    with store.session() as con:
        assert _holding(store, qs[1], 5, ["/docs/c/new.md"]) == _exact(con, qs[1], 5, "/docs/c/new.md")
        assert _ask(store, qs[1], c=0.3) == _exact(con, qs[1], 10, None, 0.3)
    assert seen == [1] and S.read(snap, DIM, True).n == 1207
    assert not list(snap.parent.glob(".vectors-*"))


def test_a_foreign_or_damaged_compact_snapshot_is_never_trusted(store, tmp_path, monkeypatch):
    monkeypatch.setattr(V, "COMPACT_ABOVE", 100)
    key, snap, q = str(store.db_file), V.snapshot_path(str(store.db_file)), _queries(1)[0]
    other = Store(tmp_path / "other" / "index.duckdb")
    rng = np.random.default_rng(26)
    for i in range(40):
        _add(other, rng, f"{'a' if i < 4 else 'b'}/doc{i:02d}.md", 30)
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "1")
    _holding(other, q)
    whole = V.snapshot_path(str(other.db_file)).read_bytes()
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    with store.session() as con:
        for bad in [
            whole,
            whole[: len(whole) // 2],
            whole.replace(b'"dim": 384', b'"dim": 385', 1),
            whole.replace(b'"layout": "compact"', b'"layout": "compacx"', 1),
            b"minirag vectors 1\n" + b"\xff" * 100,
        ]:
            snap.write_bytes(bad)
            assert _one_shot(store, q, c=0.3) == _exact(con, q, 10, None, 0.3)
            assert key not in V._cache  # scanned in DuckDB
    other.close()


def test_a_one_shot_writer_leaves_a_compact_snapshot_and_a_damaged_delta_is_never_trusted(store, monkeypatch):
    """No server ever ran: a CLI sync writes the compact snapshot whole, later writes only add rows in its room; a
    delta or row whose bytes changed is ignored (the rows are written again)."""
    monkeypatch.setattr(V, "COMPACT_ABOVE", 100)
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "0")
    key, snap, rng, qs = str(store.db_file), V.snapshot_path(str(store.db_file)), np.random.default_rng(27), _queries(2)
    said = []
    with store.session() as con:
        assert V.keep_compact(con, key, write=False) is None and not snap.exists()  # an ingest does not write it whole
        assert V.keep_compact(con, key, say=said.append) == "written" and "1,200 chunks" in said[0]
    ino, size = _state(snap)
    read = []  # the sources' stamps read from DuckDB: not while the index is as the snapshot says
    real = Feeds.stamps
    monkeypatch.setattr(Feeds, "stamps", lambda self, con=None: read.append(1) or real(self, con))
    with store.session() as con:
        assert _one_shot(store, qs[0], c=0.3) == _exact(con, qs[0], 10, None, 0.3)
    assert read == [] and V._cache[key].mapped and V._cache[key]._stamps_from is not None  # nor from the file
    _add(store, rng, "c/new.md", 7)
    seen = _loads(monkeypatch)
    with store.session() as con:
        assert V.keep_compact(con, key) == "followed"
    assert seen == [1] and _state(snap) == (ino, size) and S.read(snap, DIM, True).n == 1207 and len(read) == 1
    with store.session() as con:
        assert _one_shot(store, qs[0], 5, ["/docs/c/new.md"]) == _exact(con, qs[0], 5, "/docs/c/new.md")
    assert V._cache[key].mapped and seen == [1]
    whole, delta = snap.read_bytes(), S.delta_path(snap).read_bytes()
    row = S.read(snap, DIM, True).snap.at["q8"] + 1203 * DIM  # an appended row's int8 vector
    for bad_snap, bad_delta in [
        (whole, delta[:-3]),
        (whole, delta.replace(b'"n": 1207', b'"n": 1206', 1)),
        (whole[:row] + bytes(DIM) + whole[row + DIM :], delta),
    ]:
        snap.write_bytes(bad_snap)
        S.delta_path(snap).write_bytes(bad_delta)
        assert S.read(snap, DIM, True).n == 1200  # the delta is ignored: the snapshot lacks the new rows
        with store.session() as con:
            assert _one_shot(store, qs[1], 5, ["/docs/c/new.md"]) == _exact(con, qs[1], 5, "/docs/c/new.md")
        # a damaged delta names no rows: under the file's lock the process wrote the new rows into the room again
        assert V._cache[key].mapped and S.read(snap, DIM, True).n == 1207
