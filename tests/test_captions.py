"""Caption files as the reference reads them, from outside: the installed `minirag-mcp` CLI syncs a folder of WebVTT
exports in the encodings meeting tools write and a real SubRip file, then reads them back and searches them."""

import json, os, shutil, subprocess, sys
from pathlib import Path

import pytest
from conftest import said

CLI = str(Path(sys.executable).parent / "minirag-mcp")  # the console script pip installed (what PATH runs)
DATA = Path(__file__).parent / "data" / "captions"

# a Teams export: CRLF, cue ids `<meeting>/<utterance>-<segment>`, one utterance split around an interjection
TEAMS = """WEBVTT

NOTE Совещание по закупкам

b1c2/17-0
00:00:02.410 --> 00:00:07.880
<v Маркс, Дана>Коллеги, ставка <5% и >3% годовых
по кредиту на склад</v>

b1c2/23-0
00:00:06.300 --> 00:00:06.900
<v Иванова, Ольга>Ага.</v>

b1c2/17-1
00:00:07.880 --> 00:00:08.420
<v Маркс, Дана>согласована банком.</v>
""".replace("\n", "\r\n")
LEGACY = """WEBVTT

00:00:01.000 --> 00:00:04.000
<v Иванова, Ольга>Согласовали бюджет на следующий квартал.

00:00:05.000 --> 00:00:09.000
<v Маркс, Дана>Тогда переходим к срокам поставки оборудования.
"""


def cli(env, *args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def synced(tmp_path_factory, model_dir):
    "A root of caption files synced once through the CLI: (root, env, sync result as JSON)."
    root = Path(os.path.realpath(tmp_path_factory.mktemp("captions"))) / "docs"
    root.mkdir()
    (root / "teams-utf16.vtt").write_bytes(TEAMS.encode("utf-16"))
    (root / "teams-utf32.vtt").write_bytes(TEAMS.replace("склад", "цех").encode("utf-32"))
    (root / "legacy.vtt").write_bytes(LEGACY.encode("cp1251"))
    (root / "short.vtt").write_bytes("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n<v Ольга>Да.\n".encode("cp1251"))
    (root / "broken.vtt").write_text("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\n<v A>Да\n\nпросто строка\nи ещё одна\n")
    shutil.copy(DATA / "meeting.srt", root / "meeting.srt")
    env = {**os.environ, "BASE_DIR": str(root), "DB_PATH": str(root.parent / "index"), "MODEL_NAME": str(model_dir),
           "CACHE_DIR": str(model_dir.parent)}
    r = cli(env, "sync", "--json")
    assert "Traceback" not in r.stderr, r.stderr
    return root, env, json.loads(r.stdout)


def text_of(synced, name: str) -> str:
    root, env, _ = synced
    r = cli(env, "read", str(root / name), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)["text"]


def test_teams_exports_decode_join_segments_and_keep_notes_and_bare_angle_brackets(synced):
    for name in ("teams-utf16.vtt", "teams-utf32.vtt"):
        text = text_of(synced, name)
        assert "> Совещание по закупкам" in text, text
        assert "00:00:02 Маркс, Дана: Коллеги, ставка <5% и >3% годовых по кредиту на " in text, text
        assert "согласована банком." in text and text.count("Маркс, Дана") == 1, text  # 17-0 and 17-1 are one line
        assert "00:00:06 Иванова, Ольга: Ага." in text, text


def test_a_cp1251_export_decodes_and_a_short_one_fails_asking_for_utf8(synced):
    root, _, res = synced
    assert "00:00:01 Иванова, Ольга: Согласовали бюджет на следующий квартал." in text_of(synced, "legacy.vtt")
    why = {Path(w.split(": ", 1)[0]).name: w for w in said(res) if w.startswith(str(root))}
    assert "save it as UTF-8" in why["short.vtt"], said(res)
    assert "neither a cue nor a note: 'просто строка'" in why["broken.vtt"], said(res)
    listed = json.loads(cli(synced[1], "list", "--json").stdout)["files"]
    assert {f["displayPath"]: f["state"] for f in listed if f["displayPath"] in ("short.vtt", "broken.vtt")} == {
        "short.vtt": "failed",
        "broken.vtt": "failed",
    }


def test_a_subrip_file_is_a_transcript_and_searchable(synced):
    root, env, res = synced
    text = text_of(synced, "meeting.srt")
    # cut by the transcript rules into two-minute windows, one line per cue, markup and SubRip's `{\\an8}` gone
    assert text.startswith("[00:00–02:00] meeting\n\n00:00:00 Dana: Good morning, this is the quarterly supply review.")
    assert "[02:00–04:00] meeting\n\n00:02:14 Olga" in text, text
    assert "00:00:08 Olga: The contract renews on the first of April." in text, text
    assert "00:02:14 Olga: Penalty clause: 2% per day when the temperature log is < 48 hours." in text, text
    assert "00:02:19 Dana: Agreed, we sign it on Monday." in text and "{" not in text and "-->" not in text, text
    r = cli(env, "query", "cold-storage contract Nordfrost", "--json")
    hits = json.loads(r.stdout)["results"]
    assert hits[0]["source"] == str(root / "meeting.srt"), hits
    assert ".srt" not in res.get("skippedByFormat", {}), res
