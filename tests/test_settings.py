"""One settings table (minirag.config.SETTINGS) builds the Config, the CLI's environment help and README's table;
process knobs are read with `config.setting` and keep their messages and fallbacks."""

import logging, subprocess, sys
from dataclasses import fields
from pathlib import Path
import pytest
from minirag import config, tuning
from minirag.config import SETTINGS, Config, ConfigError, setting, load_config

ROOT = Path(__file__).resolve().parents[1]


def test_readme_table_is_the_settings_table():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = config.readme_block(readme)
    assert block is not None, "README.md lost the <!-- settings:start --> … <!-- settings:end --> markers"
    assert block == config.settings_markdown(), (
        "README.md's configuration table is stale: run `python tools/settings_table.py`"
    )


def test_settings_tool_check_agrees():
    r = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "settings_table.py"), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_environment_help_lists_every_user_setting():
    h = config.environment_help()
    assert h.startswith("environment (a flag overrides its variable):\n")
    for s in SETTINGS.values():
        if s.kind == "test":
            assert s.name not in h
        else:
            assert f"\n  {s.name} " in h, s.name
    assert all(len(line) <= 140 for line in h.splitlines())


def test_config_defaults_come_from_the_table():
    c = Config()
    names = [f.name for f in fields(Config)]
    want = list(dict.fromkeys(s.field for s in SETTINGS.values() if s.kind == "config")) + ["error"]
    assert names == want
    for s in SETTINGS.values():
        if s.kind == "config" and s.parse != "roots":
            assert getattr(c, s.field) == s.default, s.name
    assert (c.chunk_token_budget, c.hybrid_weight, c.max_file_size, c.ocr_min_chars) == (110, 0.6, 104857600, 25)
    assert not hasattr(Config, "public")


def test_load_config_messages_stay():
    e = load_config(
        {
            "CHUNK_TOKEN_BUDGET": "900",
            "RAG_FUSION": "fancy",
            "RAG_GROUPING": "x",
            "MAX_FILE_SIZE": "big",
            "ALLOW_PRIVATE_URLS": "perhaps",
            "RAG_OCR_LANG": "klingon",
        },
        cwd="/tmp",
    ).error
    for part in [
        "CHUNK_TOKEN_BUDGET='900' is out of range; valid: 16..128",
        "RAG_FUSION='fancy' is not valid; use 'adaptive' (default) or 'rrf'",
        "RAG_GROUPING='x' is not valid; use 'similar', 'related' or leave it unset",
        "MAX_FILE_SIZE='big' is not a whole number of bytes; set it to >= 1 or unset it",
        "ALLOW_PRIVATE_URLS='perhaps' is not a boolean; use 1/true/yes/on or 0/false/no/off",
        "RAG_OCR_LANG='klingon' is not a known OCR language; valid values: auto, ru, en",
    ]:
        assert part in e, (part, e)
    assert e.index("MAX_FILE_SIZE") < e.index("CHUNK_TOKEN_BUDGET") < e.index("RAG_GROUPING") < e.index("RAG_FUSION")


def test_idle_close_bad_value_is_logged_and_30_used(caplog):
    with caplog.at_level(logging.WARNING, logger="minirag"):
        assert setting("MINIRAG_IDLE_CLOSE", {"MINIRAG_IDLE_CLOSE": "soon"}) == 30.0
    assert "MINIRAG_IDLE_CLOSE='soon' is not a number of seconds ≥ 0; using 30.0" in caplog.text
    assert setting("MINIRAG_IDLE_CLOSE", {"MINIRAG_IDLE_CLOSE": "2"}) == 2.0


def test_process_knobs_parse_as_before():
    assert setting("MINIRAG_LOCK_WAIT", {}) == 15.0
    with pytest.raises(ConfigError, match="MINIRAG_LOCK_WAIT='x' is not a number of seconds"):
        setting("MINIRAG_LOCK_WAIT", {"MINIRAG_LOCK_WAIT": "x"})
    assert [setting("MINIRAG_WARM_UP", {"MINIRAG_WARM_UP": v}) for v in ("0", "1", "", "yes")] == [
        False,
        True,
        True,
        True,
    ]
    assert [setting("MINIRAG_DEBUG", e) for e in ({}, {"MINIRAG_DEBUG": ""}, {"MINIRAG_DEBUG": "1"})] == [
        False,
        False,
        True,
    ]
    assert (
        setting("MINIRAG_TEST_PAUSE_SECONDS", {}) == 120.0
        and setting("MINIRAG_TEST_PAUSE_AT", {"MINIRAG_TEST_PAUSE_AT": "txn"}) == "txn"
    )
    with pytest.raises(ConfigError, match="MINIRAG_DUCKDB_MEMORY='lots' is not a memory size; use e.g. 256MB or 1GB"):
        setting("MINIRAG_DUCKDB_MEMORY", {"MINIRAG_DUCKDB_MEMORY": "lots"})
    assert setting("RAG_FUSION", {"RAG_FUSION": " RRF "}) == "rrf"
    with pytest.raises(KeyError, match="not a minirag setting"):
        setting("MINIRAG_NOPE")


def test_tuning_profiles(monkeypatch):
    monkeypatch.delenv("MINIRAG_HOLD_VECTORS", raising=False)
    monkeypatch.delenv("MINIRAG_DUCKDB_MEMORY", raising=False)
    monkeypatch.setitem(tuning._process, "kind", "library")
    monkeypatch.setitem(tuning._process, "limit", None)  # an earlier test's compact matrix may have lowered the cap
    assert tuning.holds_vectors() and tuning.duckdb_memory() == "512MB" and tuning.write_memory() == "128MB"
    monkeypatch.setitem(tuning._process, "kind", "cli")
    assert not tuning.holds_vectors()
    monkeypatch.setenv("MINIRAG_HOLD_VECTORS", "1")
    assert tuning.holds_vectors()
    assert tuning.compact_memory() == "64MB" and tuning.scan_memory() == "256MB"


def test_no_import_cycle_config_ocr():
    code = (
        "import sys, minirag.config; assert 'minirag.formats.ocr' not in sys.modules; "
        "minirag.config.load_config({'RAG_OCR_LANG': 'en'}); assert 'minirag.formats.ocr' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    src = (ROOT / "minirag" / "config.py").read_text()
    assert "from minirag.formats" not in src and "from .formats" not in src and "import tuning" not in src
