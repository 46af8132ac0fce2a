"""The CLI in a real pseudo-terminal, as a person types it: Ctrl-C during a sync (once: it stops after the batch in
flight is committed and says so; twice: it exits at once with 130, no C++ abort), and the index opens and resumes."""

import json, os, pty, re, signal, subprocess, sys, time
from pathlib import Path
import pytest
from conftest import write

CLI = str(Path(sys.executable).parent / "minirag-mcp")
N_FILES = 300
ENV_VARS = ["BASE_DIR", "BASE_DIRS", "DB_PATH", "CACHE_DIR", "MODEL_NAME"]


def _env(root, db, model_dir):
    e = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    return dict(e, BASE_DIR=str(root), DB_PATH=str(db), MODEL_NAME=str(model_dir), CACHE_DIR=str(model_dir.parent))


def _corpus(root: Path):
    for i in range(N_FILES):
        body = "\n\n".join(f"Paragraph {j} of note {i} is on topic {(i * 7 + j) % 31}, zebra {i}." for j in range(12))
        write(root, f"d{i // 50}/n{i:03}.md", f"# Note {i}\n\n{body}\n")


class Terminal:
    "A command on a pseudo-terminal (stdin, stdout, stderr), read as it prints."

    def __init__(self, *args, cwd, env):
        import fcntl, struct, termios

        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 150, 0, 0))  # a 150-column terminal
        self.p = subprocess.Popen(
            [CLI, *args], stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, start_new_session=True
        )
        os.close(slave)
        self.text = ""

    def read(self, seconds: float) -> str:
        "Read what arrives within `seconds` (or until the command closes the terminal)."
        import select

        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            r, _, _ = select.select([self.master], [], [], min(left, 0.05))
            if r:
                try:
                    b = os.read(self.master, 65536)
                except OSError:
                    break
                if not b:
                    break
                self.text += b.decode("utf-8", "replace")
        return self.text

    def wait_for(self, needle: str, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if needle in self.read(0.05):
                return True
            if self.p.poll() is not None:
                self.read(0.2)
                return needle in self.text
        return False

    def interrupt(self):
        os.killpg(self.p.pid, signal.SIGINT)  # what the terminal sends the foreground group on Ctrl-C

    def finish(self, seconds: float) -> int:
        end = time.monotonic() + seconds
        while self.p.poll() is None and time.monotonic() < end:
            self.read(0.05)
        self.read(0.2)
        os.close(self.master)
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
            pytest.fail(f"still running after {seconds} s:\n{self.text[-2000:]}")
        return self.p.returncode


def _committed(root, env) -> int:
    "Files in the index, by a fresh process: the index opens after the interrupted run."
    r = subprocess.run([CLI, "status", "--json"], capture_output=True, text=True, cwd=root, env=env, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    s = json.loads(r.stdout)
    assert not s.get("indexError") and not s.get("configError"), s
    return s.get("sourceCount") or 0


def _clean(out: str):
    for bad in ("Traceback", "terminate called", "Aborted", "core dumped", "KeyboardInterrupt"):
        assert bad not in out, out[-2000:]


@pytest.fixture(scope="module")
def world(tmp_path_factory, model_dir):
    "A root of a few hundred notes (a few embedding batches) and the environment of one index over it."
    root = Path(os.path.realpath(tmp_path_factory.mktemp("term"))) / "docs"
    _corpus(root)
    return root, _env(root, root.parent / "idx", model_dir)


def test_ctrl_c_while_starting_exits_130_quietly(world):
    "Ctrl-C before the sync writes anything (imports, scanning): exit 130, no trace, nothing half-made."
    root, env = world
    t = Terminal("sync", cwd=root, env=env)
    time.sleep(1.0)  # past the interpreter's own start (a Ctrl-C there is Python's, before any of minirag runs)
    t.interrupt()
    code = t.finish(60)
    assert code in (130, -signal.SIGINT), (code, t.text[-2000:])
    _clean(t.text)


def test_one_ctrl_c_while_the_first_batch_embeds(world):
    "The batch being embedded is dropped, the command says it stops and what was committed, exit 130."
    root, env = world
    t = Terminal("sync", cwd=root, env=env)
    assert t.wait_for("embedding", 180), t.text[-2000:]
    t.interrupt()
    asked = time.monotonic()
    assert t.wait_for("stopping once the batch being written is committed", 2), t.text[-2000:]
    code = t.finish(120)
    print(f"one Ctrl-C while embedding: stopped {time.monotonic() - asked:.2f} s later")
    assert code == 130, t.text[-2000:]
    _clean(t.text)
    n = _committed(root, env)
    assert f"stopped on request: {n} of {N_FILES} file(s) to read were committed; run sync again" in t.text, t.text
    assert n < N_FILES


def test_one_ctrl_c_after_a_commit_keeps_what_was_committed(world):
    "A second run: wait until the bar counts committed files, then Ctrl-C; the count it reports is in the index."
    root, env = world
    before = _committed(root, env)
    t = Terminal("sync", cwd=root, env=env)
    # the bar shows files committed by this run (the first phase counts what needs reading)
    assert t.wait_for("embedding", 180), t.text[-2000:]
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not re.search(rf"\| *[1-9]\d*/{N_FILES} \[", t.text):
        t.read(0.1)
    t.interrupt()
    asked = time.monotonic()
    assert t.wait_for("stopping once", 2), t.text[-2000:]
    code = t.finish(120)
    print(f"one Ctrl-C after a commit: stopped {time.monotonic() - asked:.2f} s later")
    assert code == 130, t.text[-2000:]
    _clean(t.text)
    n = _committed(root, env)
    assert n > before, (before, n, t.text[-2000:])
    assert f"stopped on request: {n - before} of {N_FILES - before} file(s)" in t.text, (before, n, t.text[-1500:])


@pytest.mark.parametrize("gap", [0.05, 0.8])
def test_two_ctrl_c_exit_at_once_with_130_and_no_abort(world, gap):
    root, env = world
    before = _committed(root, env)
    t = Terminal("sync", cwd=root, env=env)
    assert t.wait_for("embedding", 180), t.text[-2000:]
    t.interrupt()
    assert t.wait_for("stopping once", 2), t.text[-2000:]
    time.sleep(gap)
    t.interrupt()
    asked = time.monotonic()
    code = t.finish(20)
    took = time.monotonic() - asked
    print(f"second Ctrl-C {gap} s after the first: exited {took:.2f} s later")
    _clean(t.text)
    if "stopped on request" not in t.text:  # the first one had not finished the run already
        assert code == 130 and "exiting now" in t.text, (code, t.text[-2000:])
        assert took < 1.5, "a second Ctrl-C exits at once"
    assert _committed(root, env) >= before  # the index opens


def test_the_next_sync_resumes_and_finishes(world):
    root, env = world
    n = _committed(root, env)
    r = subprocess.run([CLI, "sync", "--json"], capture_output=True, text=True, cwd=root, env=env, timeout=900)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["skipped"] == n and rep["ingested"] == N_FILES - n and rep["failed"] == 0, (n, rep)
    assert _committed(root, env) == N_FILES
