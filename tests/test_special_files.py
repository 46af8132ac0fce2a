"""Files that are not plain documents cannot hold a sync: a FIFO, a device node, a sparse file of 20 GB, and a file
that takes too long to read. Each run goes through the installed CLI as a subprocess, with a deadline: before this,
the FIFO made `sync` wait forever and the sparse file was hashed whole before its size was refused."""

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import said, write

CLI = str(Path(sys.executable).parent / "minirag-mcp")
ENV_VARS = ["BASE_DIR", "BASE_DIRS", "DB_PATH", "MAX_FILE_SIZE", "FILE_TIME_LIMIT"]


def env_for(root: Path, model_dir: Path, **extra) -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    return dict(
        e,
        BASE_DIR=str(root),
        DB_PATH=str(root.parent / "idx"),
        MODEL_NAME=str(model_dir),
        CACHE_DIR=str(model_dir.parent),
        **extra,
    )


def sync(env: dict, deadline: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    "`minirag-mcp sync --json`, killed (and failed) past `deadline` seconds; with its wall time."
    t = time.monotonic()
    try:
        r = subprocess.run([CLI, "sync", "--json"], capture_output=True, text=True, env=env, timeout=deadline)
    except subprocess.TimeoutExpired:
        pytest.fail(f"sync did not return within {deadline} s")
    return r, time.monotonic() - t


@pytest.fixture
def docs(tmp_path):
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "good.md", "# Lighthouse\n\nThe keeper trims the lamp wick every evening at dusk.\n")
    return root


def test_a_fifo_in_a_root_is_passed_over(docs, model_dir):
    os.mkfifo(docs / "drop.md")
    r, _ = sync(env_for(docs, model_dir), deadline=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ingested"] == 1
    # a link to the FIFO, inside the root, is not read either
    os.symlink(docs / "drop.md", docs / "link.md")
    r, _ = sync(env_for(docs, model_dir))
    assert r.returncode == 0 and json.loads(r.stdout)["skipped"] == 1, r.stdout + r.stderr


def test_a_device_node_in_a_root_is_passed_over(docs, model_dir):
    try:
        os.mknod(docs / "zero.md", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: a read never ends
    except PermissionError:
        pytest.skip("making a device node needs root (CI runs as root)")
    r, _ = sync(env_for(docs, model_dir))
    assert r.returncode == 0 and json.loads(r.stdout)["ingested"] == 1, r.stdout + r.stderr


def test_a_huge_sparse_file_is_refused_by_its_size_before_it_is_read(docs, model_dir):
    with open(docs / "huge.md", "wb") as f:
        f.truncate(200 * 2**30)  # 200 GB long, nothing on disk: hashed first, it read zeros for minutes
    r, secs = sync(env_for(docs, model_dir), deadline=90)
    out = json.loads(r.stdout)
    assert out["ingested"] == 1 and out["failed"] == 1, r.stdout
    assert any("huge.md: 214,748,364,800 bytes is over MAX_FILE_SIZE" in w for w in said(out)), said(out)
    assert "Traceback" not in r.stderr
    assert secs < 60, f"{secs:.0f} s: the file was read before it was refused"


def test_a_file_that_takes_too_long_fails_alone(docs, model_dir):
    # about 250,000 paragraphs take several seconds to cut into chunks: over a one-second limit
    write(docs, "slow.md", "".join(f"Paragraph {i} of a very long file about lamps.\n\n" for i in range(250_000)))
    r, _ = sync(env_for(docs, model_dir, FILE_TIME_LIMIT="1"))
    out = json.loads(r.stdout)
    assert "ingested" in out, r.stdout + r.stderr
    assert out["ingested"] == 1 and out["failed"] == 1, r.stdout + r.stderr
    (msg,) = [w for w in said(out) if "slow.md" in w]
    assert "longer than FILE_TIME_LIMIT (1 s)" in msg, msg
    # unchanged, it is not read again: the next sync settles it from the remembered failure at once
    r, secs = sync(env_for(docs, model_dir, FILE_TIME_LIMIT="1"))
    assert any("slow.md" in w for w in said(json.loads(r.stdout))) and secs < 30
