"""The CLI alone, no server, above the compact size: a sync writes the compact snapshot, later CLI writes (ingest,
delete) bring it up to date in place, and each one-shot query maps it and answers as a scan does.

Each command is a real `minirag.cli` process; the size threshold is lowered inside that process (a real index of
200k chunks would take an hour to embed here), which is the only thing the wrapper changes."""

import json, os, shutil, subprocess, sys
from pathlib import Path

from conftest import write

# the real CLI with the compact threshold lowered; at exit it says whether the query read a mapped compact matrix
CLI = """
import sys
import minirag.vectors.held as V
V.COMPACT_ABOVE = int(sys.argv[1])
from minirag.cli import run
code = run(sys.argv[2:])
mapped = [k for k, vm in V._cache.items() if vm.compact and vm.mapped]
print("compact-mapped " + str(bool(mapped)), file=sys.stderr)
sys.exit(code)
"""

TOPICS = [
    "refund of an overpayment",
    "kneading bread dough",
    "renewing a passport",
    "pruning apple trees",
    "calibrating a thermostat",
    "filing a tax return",
    "tuning a guitar",
    "repairing a bicycle chain",
]


def _env(root: Path, db: Path, model_dir: Path) -> dict:
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "PYTHONPATH") if k in os.environ}
    return {
        **keep,
        "BASE_DIR": str(root),
        "DB_PATH": str(db),
        "MODEL_NAME": str(model_dir),
        "CACHE_DIR": str(model_dir.parent),
        "MINIRAG_HOLD_VECTORS": "0",
    }


def _cli(env, *args, above=5):
    p = subprocess.run(
        [sys.executable, "-c", CLI, str(above), *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert p.returncode == 0, p.stderr
    return p


def _snapshot(db: Path):
    from minirag.vectors import held as V

    (f,) = db.glob("*.duckdb")
    return V.snapshot_path(str(f))


def _state(snap: Path):
    from minirag.vectors import snapshot as S

    vm = S.read(snap, 384, True)
    assert vm is not None, "the compact snapshot is missing or not whole"
    try:
        return vm.n, int(vm.alive[: vm.n].sum())
    finally:
        vm.close()


def _answer(env, q, above=5):
    p = _cli(env, "query", q, "--top-k", "5", "--weight", "0", "--json", above=above)
    hits = json.loads(p.stdout)["results"]
    return [(h["source"], h["chunkIndex"]) for h in hits], "compact-mapped True" in p.stderr


def _exact(env, db: Path, tmp: Path, q):
    "The same query on a copy of the index with no snapshot beside it, below the threshold: every vector compared."
    copy = tmp / f"copy{len(list(tmp.glob('copy*')))}"
    copy.mkdir()
    for f in db.glob("*.duckdb"):
        shutil.copy(f, copy / f.name)
    hits, mapped = _answer({**env, "DB_PATH": str(copy)}, q, above=10**9)
    assert not mapped
    return hits


def test_cli_writes_keep_the_compact_snapshot_and_queries_map_it(root, tmp_path, model_dir):
    for i, t in enumerate(TOPICS):
        write(root, f"doc{i}.md", f"# {t.title()}\n\n" + "\n\n".join(f"Step {k} of {t}: note {k}." for k in range(3)))
    db = tmp_path / "db"
    env = _env(root, db, model_dir)
    p = _cli(env, "sync")
    snap = _snapshot(db)
    assert "writing the vector snapshot" in p.stderr and snap.exists(), p.stderr
    n, alive = _state(snap)
    assert n == alive > 5

    hits, mapped = _answer(env, "how do I get my overpayment back")
    assert mapped and hits[0][0] == str(root / "doc0.md")
    assert hits == _exact(env, db, tmp_path, "how do I get my overpayment back")

    ino = snap.stat().st_ino
    write(root, "new.md", "# Sharpening Knives\n\nHold the blade at twenty degrees to the whetstone.")
    p = _cli(env, "ingest", str(root / "new.md"))
    assert "writing the vector snapshot" not in p.stderr and snap.stat().st_ino == ino  # added in place, not rewritten
    n2, alive2 = _state(snap)
    assert n2 > n and alive2 == n2
    hits, mapped = _answer(env, "what angle to sharpen a knife at")
    assert mapped and hits[0][0] == str(root / "new.md")

    _cli(env, "delete", str(root / "doc0.md"))
    n3, alive3 = _state(snap)
    assert n3 == n2 and alive3 < alive2, "the delete did not mark its rows in the snapshot"
    hits, mapped = _answer(env, "how do I get my overpayment back")
    assert mapped and str(root / "doc0.md") not in {s for s, _ in hits}
    assert hits == _exact(env, db, tmp_path, "how do I get my overpayment back")
    assert snap.stat().st_ino == ino
