"""The chunks table's lookup indexes (ART on id and source) agree with the table through every kind of write, a
dropped-and-rebuilt cycle, checkpoints, and a killed writer (DuckDB 1.5 replays deletes into an ART index wrongly;
`Store` rebuilds them after a replay)."""

import random, signal, subprocess, sys, textwrap
import numpy as np
from minirag.store import Store, lookups_present
from minirag.tables import Tables, SourceRecord


def _rows(rnd, n):
    return [
        dict(
            chunk_index=i,
            parent_id=str(i // 3),
            text=f"chunk {i} words {rnd.random()}",
            prefix_len=0,
            section_head="",
            kind="text",
            tokens=5,
            scheme=2,
        )
        for i in range(n)
    ]


def _agree(st):
    "Every source's rows found through the index equal those found by a scan; every sampled id is found by id."
    with st.session() as c:
        assert lookups_present(c)
        for (s,) in c.execute("SELECT source FROM sources").fetchall():
            by_index = c.execute("SELECT count(*) FROM chunks WHERE source = ?", [s]).fetchone()[0]
            by_scan = c.execute("SELECT count(*) FROM chunks WHERE source || '' = ?", [s]).fetchone()[0]
            assert by_index == by_scan, (s, by_index, by_scan)
        ids = [r[0] for r in c.execute("SELECT id FROM chunks USING SAMPLE 25 ROWS").fetchall()]
        assert c.execute("SELECT count(*) FROM chunks WHERE id IN (SELECT unnest(?::BIGINT[]))", [ids]).fetchone()[
            0
        ] == len(ids)


def test_lookups_follow_every_write(tmp_path):
    st, rnd, rng = Store(tmp_path / "index.duckdb"), random.Random(1), np.random.default_rng(1)
    tb = Tables(st)
    names = [f"/docs/f{i:02}.md" for i in range(30)]
    tb.write_batch([(SourceRecord(names[0]), _rows(rnd, 3), rng.standard_normal((3, 8)).astype(np.float32))], "m")
    tb.ensure_lookups()
    for step in range(150):
        op = rnd.random()
        if op < 0.6:
            items = [
                (SourceRecord(s), _rows(rnd, n), rng.standard_normal((n, 8)).astype(np.float32))
                for s in rnd.sample(names, rnd.randint(1, 4))
                for n in [rnd.randint(1, 20)]
            ]
            tb.write_batch(items, "m")
        elif op < 0.8:
            tb.delete(rnd.choice(names))
        else:
            with st.session() as c:
                have = [r[0] for r in c.execute("SELECT source FROM sources").fetchall()]
            old, new = rnd.choice(have), rnd.choice(names)
            if old != new:
                tb.rename(old, new, "/docs")
        if step == 70:  # what a large sync does: drop, write, rebuild
            tb.drop_lookups()
        if step == 90:
            tb.ensure_lookups()
        if step % 25 == 0 and step != 75:
            with st.session() as c:
                c.execute("CHECKPOINT")
        if step % 15 == 0 and not 70 <= step < 90:
            _agree(st)
    _agree(st)


def test_lookups_are_rebuilt_after_a_killed_writer(tmp_path):
    """A process killed after committing a replace (its log not yet folded into the file) leaves indexes the next open
    rebuilds."""
    db = tmp_path / "index.duckdb"
    st, rnd, rng = Store(db), random.Random(2), np.random.default_rng(2)
    Tables(st).write_batch(
        [
            (SourceRecord(f"/d/{i}.md"), _rows(rnd, 5), rng.standard_normal((5, 8)).astype(np.float32))
            for i in range(10)
        ],
        "m",
    )
    with st.session() as c:
        Tables(st).ensure_lookups()
        c.execute("CHECKPOINT")
    st.close()
    child = textwrap.dedent(f"""
        import os, random, signal, numpy as np
        from minirag.store import Store
        from minirag.tables import Tables, SourceRecord
        st = Store({str(db)!r}); rnd = random.Random(3)
        rows = [
            dict(chunk_index=i, parent_id="0", text=f"new {{i}}", prefix_len=0, section_head="", kind="text", tokens=2,
                 scheme=2)
            for i in range(7)
        ]
        with st.session():   # kept open: no checkpoint on close
            Tables(st).write_batch([(SourceRecord("/d/3.md"), rows, np.ones((7, 8), np.float32))], "m")
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    assert p.returncode == -signal.SIGKILL, p.stderr[-2000:]
    assert (tmp_path / "index.duckdb.wal").exists(), "the kill left a log to replay"
    st = Store(db)
    _agree(st)
    with st.session() as c:
        assert c.execute("SELECT count(*) FROM chunks WHERE source = '/d/3.md'").fetchone()[0] == 7
