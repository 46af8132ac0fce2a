"""The CLI as people expect it, driven as the installed `minirag-mcp`: typos are errors, old failures only warn,
the model is named once, and the conventions of the tools people like (colour, short flags, stdin)."""

import json, os
from pathlib import Path
import pytest
from conftest import write
from test_cli import CLI, cli, _env

PDF_BAD = b"%PDF-1.4 not really a PDF"
FIELDS = [
    "scanned",
    "ingested",
    "skipped",
    "moved",
    "deleted",
    "relabelled",
    "unreadable",
    "failed",
    "errors",
    "warnings",
    "scope",
    "seconds",
    "skippedByFormat",
]


@pytest.fixture()
def broken(tmp_path, model_dir):
    "A root with one good note and one corrupt PDF, synced once (the PDF failed): (root, env, first sync)."
    root = Path(os.path.realpath(tmp_path)) / "docs"
    write(root, "notes/keys.md", "# Keys\n\n## Rotation\n\nRotate the signing keys every ninety days.\n")
    (root / "bad.pdf").write_bytes(PDF_BAD)
    env = _env(root, tmp_path / "idx", model_dir)
    return root, env, cli("sync", cwd=root, env=env)


def test_sync_of_a_mistyped_path_is_an_error(broken):
    root, env, first = broken
    assert first.returncode == 1, first.stderr  # the PDF failed in this run: a failure
    r = cli("sync", "notse", cwd=root, env=env)  # a typo of notes
    assert r.returncode == 1 and r.stdout == "", (r.stdout, r.stderr)
    assert r.stderr.startswith("error: notse does not exist") and "minirag-mcp list" in r.stderr, r.stderr
    j = cli("sync", "notse", "--json", cwd=root, env=env)
    assert j.returncode == 1 and json.loads(j.stdout)["type"] == "MiniragError"
    # a path that is gone but indexed is a sync's job: it leaves the index, exit 0
    (root / "notes/keys.md").unlink()
    gone = cli("sync", "notes/keys.md", "--json", cwd=root, env=env)
    assert gone.returncode == 0 and json.loads(gone.stdout)["deleted"] == 1, (gone.stdout, gone.stderr)


def test_known_failures_warn_and_new_ones_fail(broken):
    root, env, first = broken
    again = cli("sync", cwd=root, env=env)  # the PDF is unchanged: not read again, not a new failure
    assert again.returncode == 0, again.stderr
    assert "failed 1" in again.stdout and "warn: 1 file(s) failed before and are unchanged" in again.stderr
    assert cli("sync", "--strict", "-q", cwd=root, env=env).returncode == 1
    j = cli("sync", "--json", cwd=root, env=env)  # the JSON is the MCP tool's, field for field
    assert j.returncode == 0 and list(json.loads(j.stdout)) == FIELDS, j.stdout
    [e] = json.loads(j.stdout)["errors"]  # the remembered failure, named by its file
    assert e["source"] == str(root / "bad.pdf") and e["error"].endswith("(unchanged since it failed; not read again)")
    (root / "worse.pdf").write_bytes(PDF_BAD + b" and more")  # a new failure fails the run again
    assert cli("sync", "-q", cwd=root, env=env).returncode == 1


def test_plain_list_shows_why_a_file_failed(broken):
    root, env, _ = broken
    r = cli("list", cwd=root, env=env)
    lines = r.stdout.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("failed") and line.endswith("bad.pdf"))
    assert "could not read the PDF" in lines[i + 1] and str(root) not in lines[i + 1], r.stdout


def test_messages_name_commands_not_mcp_tools(broken):
    root, env, _ = broken
    r = cli("read", "notes/nope.md", cwd=root, env=env)
    assert r.returncode == 1 and "list_files" not in r.stderr and "`minirag-mcp list`" in r.stderr, r.stderr
    d = cli("delete", "bad.pdf", cwd=root, env=env)  # failed, so not in the index
    assert d.returncode == 1 and "list_files" not in d.stderr and "`minirag-mcp list`" in d.stderr, d.stderr


def test_the_model_note_is_said_once_and_never_with_quiet(broken):
    root, env, _ = broken
    unset = {k: v for k, v in env.items() if k != "MODEL_NAME"}  # the index keeps the packaged model it was built with
    q = cli("query", "signing keys", "-q", cwd=root, env=unset)
    assert q.returncode == 0 and q.stderr == "", q.stderr  # no note on a query, and nothing at all with -q
    assert "MODEL_NAME" not in cli("query", "signing keys", cwd=root, env=unset).stderr
    s = cli("status", cwd=root, env=unset)
    first, rest = s.stdout.splitlines()[0], s.stdout.splitlines()[1:]
    assert first.startswith("model: local:all-MiniLM-L6-v2"), s.stdout  # first: the model that answers queries
    assert not any(line.startswith("modelName: intfloat") for line in rest), s.stdout
    assert any(line.startswith("modelNote: ") for line in rest) and s.stderr == "", (s.stdout, s.stderr)
    j = json.loads(cli("status", "--json", cwd=root, env=unset).stdout)
    assert j["modelName"] == "intfloat/multilingual-e5-small"  # the JSON is the MCP tool's, unchanged


def test_short_flags_stdin_and_a_mistyped_flag(broken):
    root, env, _ = broken
    long = cli("query", "signing keys", "--top-k", "1", "--scope", "notes", "--json", cwd=root, env=env)
    short = cli("query", "-", "-k", "1", "-s", "notes", "--json", cwd=root, env=env, input="signing keys\n")
    assert short.returncode == 0 and json.loads(short.stdout) == json.loads(long.stdout), short.stderr
    assert len(json.loads(short.stdout)["results"]) == 1
    assert cli("query", "signing keys", "-n", "1", "--json", cwd=root, env=env).returncode == 0
    typo = cli("query", "keys", "--topk", "3", cwd=root, env=env)
    assert typo.returncode == 2 and typo.stderr.rstrip().endswith("did you mean '--top-k'?"), typo.stderr
    assert "did you mean '--scope'?" in cli("list", "--scoep", "notes", cwd=root, env=env).stderr


def test_sync_and_ingest_help_say_what_is_read(tmp_path):
    for name in ("sync", "ingest"):
        r = cli(name, "--help", cwd=tmp_path, env=dict(os.environ))
        assert r.returncode == 0 and "formats read" in r.stdout and ".pdf" in r.stdout, r.stdout


def _stdout_on_terminal(*args, cwd, env) -> str:
    "What a person sees with stdout on a pseudo-terminal."
    import pty, subprocess

    master, slave = pty.openpty()
    p = subprocess.Popen([CLI, *args], stdout=slave, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
    os.close(slave)
    seen = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            break
        if not b:
            break
        seen.append(b)
    p.wait(timeout=300)
    os.close(master)
    return b"".join(seen).decode("utf-8", "replace")


def test_hits_in_colour_on_a_terminal_with_their_breadcrumb(broken):
    root, env, _ = broken
    seen = _stdout_on_terminal("query", "signing keys", "-k", "1", cwd=root, env=env)
    assert "\033[1;33mkeys\033[0m" in seen and "\033[1;33msigning\033[0m" in seen, seen
    assert "§ Keys › Rotation" in seen, seen
    plain = _stdout_on_terminal("query", "signing keys", "-k", "1", cwd=root, env=dict(env, NO_COLOR="1"))
    assert "\033[" not in plain and "signing keys" in plain.lower(), plain
    piped = cli("query", "signing keys", "-k", "1", cwd=root, env=env)
    assert "\033[" not in piped.stdout and "   § Keys › Rotation\n" in piped.stdout, piped.stdout
