"""One Ctrl-C during `minirag-mcp sync`: seconds from the SIGINT to the process's exit (goal: within 1 s), in a real
pseudo-terminal as a person types it, at a different moment of each run; and, with --throughput, the seconds a
whole uninterrupted sync of the same files takes (so a faster stop is not paid for with a slower ingest).

Run (inside the bench lock; PYTHONPATH picks the code tree, so two trees can be compared run by run):
    flock BENCH_LOCK python bench/bench_interrupt.py [--runs 6] [--files 300] [--throughput]
    flock BENCH_LOCK python bench/bench_interrupt.py --runs 4 --vs /path/to/other/tree   # paired A/B

Each run starts from an empty index, waits until the progress line says it is embedding, waits a little more
(0 to 1.5 s, spread over the runs) and sends SIGINT to the command's process group, as a terminal does."""

import argparse, os, pty, re, select, signal, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--runs", type=int, default=6, help="interrupted syncs per code tree (default 6)")
ap.add_argument("--files", type=int, default=300, help="notes in the root (default 300, as tests/test_terminal.py)")
ap.add_argument("--throughput", action="store_true", help="also time whole syncs (one per run, alternating trees)")
ap.add_argument("--vs", help="a second code tree (its folder holds minirag/): runs alternate between the two")
args = ap.parse_args()

HERE = str(Path(__file__).resolve().parents[1])
TREES = [os.environ.get("PYTHONPATH") or HERE] + ([args.vs] if args.vs else [])
tmp = Path(os.path.realpath(tempfile.mkdtemp(prefix="bench-interrupt-")))
root = tmp / "docs"
for i in range(args.files):  # the terminal test's corpus: a few hundred short notes, a few embedding batches
    body = "\n\n".join(f"Paragraph {j} of note {i} is on topic {(i * 7 + j) % 31}, zebra {i}." for j in range(12))
    p = root / f"d{i // 50}" / f"n{i:03}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"# Note {i}\n\n{body}\n", encoding="utf-8")

sys.path.insert(0, TREES[0])
from minirag.embed import packaged_model_dir  # noqa: E402

model = packaged_model_dir(tmp / "models")
CMD = [sys.executable, "-c", "import sys; from minirag.cli import main; sys.exit(main())", "sync"]


def env(tree: str, db: Path) -> dict:
    ours = ("BASE_DIR", "BASE_DIRS", "DB_PATH", "CACHE_DIR", "MODEL_NAME")
    keep = {k: v for k, v in os.environ.items() if k not in ours}
    return dict(
        keep, PYTHONPATH=tree, BASE_DIR=str(root), DB_PATH=str(db), MODEL_NAME=str(model), CACHE_DIR=str(model.parent)
    )


def read(fd: int, seconds: float) -> str:
    out, end = "", time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        r, _, _ = select.select([fd], [], [], min(left, 0.02))
        if r:
            try:
                b = os.read(fd, 65536)
            except OSError:
                break
            if not b:
                break
            out += b.decode("utf-8", "replace")
    return out


def interrupted(tree: str, run: int, extra: float) -> dict:
    "One sync on a pty, one SIGINT `extra` s after it starts embedding: seconds to the stop message and to exit."
    import fcntl, struct, termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 150, 0, 0))  # a 150-column terminal: the bar shows
    p = subprocess.Popen(
        CMD,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=root,
        env=env(tree, tmp / f"idx-{run}"),
        start_new_session=True,
    )
    os.close(slave)
    text, end = "", time.monotonic() + 300
    while "embedding" not in text and p.poll() is None and time.monotonic() < end:
        text += read(master, 0.05)
    start = time.monotonic()
    while time.monotonic() - start < extra and p.poll() is None:
        text += read(master, 0.02)
    if p.poll() is not None:
        os.close(master)
        raise SystemExit(f"the sync ended (exit {p.returncode}) before the interrupt:\n{text[-1500:]}")
    os.killpg(p.pid, signal.SIGINT)
    asked, said = time.monotonic(), None
    while p.poll() is None and time.monotonic() - asked < 120:
        text += read(master, 0.01)
        if said is None and "stopping" in text:
            said = time.monotonic() - asked
    took = time.monotonic() - asked
    text += read(master, 0.2)
    os.close(master)
    if p.poll() is None:
        p.kill()
    m = re.search(r"stopped on request: (\d+) of (\d+)", text)
    return dict(exit=took, said=said, code=p.wait(), committed=int(m[1]) if m else None)


def whole(tree: str, run: int) -> float:
    t = time.monotonic()
    subprocess.run(CMD + ["--json"], capture_output=True, cwd=root, env=env(tree, tmp / f"full-{run}"), check=True)
    return time.monotonic() - t


res = {t: [] for t in TREES}
full = {t: [] for t in TREES}
for run in range(args.runs):
    extra = 1.5 * run / max(1, args.runs - 1)
    for k, tree in enumerate(TREES if run % 2 == 0 else TREES[::-1]):  # alternate the order: the load drifts
        r = interrupted(tree, run * 2 + k, extra)
        res[tree].append(r)
        print(
            f"run {run} {'A' if tree == TREES[0] else 'B'} +{extra:.2f}s: SIGINT→exit {r['exit']:.2f} s, "
            f"message after {r['said'] if r['said'] is None else round(r['said'], 2)} s, exit code {r['code']}, "
            f"{r['committed']} files committed",
            flush=True,
        )
        if args.throughput:
            full[tree].append(whole(tree, run * 2 + k))
            print(f"run {run} {'A' if tree == TREES[0] else 'B'}: whole sync {full[tree][-1]:.1f} s", flush=True)
print(f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
for name, tree in zip("AB", TREES):
    e = [r["exit"] for r in res[tree]]
    print(
        f"{name} ({tree}): SIGINT→exit median {statistics.median(e):.2f} s, max {max(e):.2f} s, "
        f"within 1 s in {sum(x <= 1 for x in e)}/{len(e)}"
        + (f"; whole sync median {statistics.median(full[tree]):.1f} s" if full[tree] else "")
    )
if args.vs and args.throughput:
    ratios = [b / a for a, b in zip(full[TREES[0]], full[TREES[1]])]
    print(f"whole sync B/A per pair: {[round(x, 3) for x in ratios]}, median {statistics.median(ratios):.3f}")
