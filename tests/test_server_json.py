"""server.json, the MCP Registry's description: it says what the package and the settings table say, and its two
transports start what the CLI serves."""

import json, subprocess, sys, tomllib
from pathlib import Path

from minirag import __version__
from minirag.cli import build_parser
from minirag.config import SETTINGS, installed_version, user_settings

ROOT = Path(__file__).resolve().parents[1]
DOC = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_server_json_is_the_rendering():
    r = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "server_json.py"), "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_names_and_version_come_from_the_package():
    assert DOC["version"] == __version__ == installed_version()
    assert DOC["name"].endswith("/" + PROJECT["name"]) and DOC["title"] == PROJECT["name"]
    assert len(DOC["description"]) <= 100 and PROJECT["description"].startswith(DOC["description"])
    for p in DOC["packages"]:
        assert (p["registryType"], p["identifier"], p["version"]) == ("pypi", PROJECT["name"], __version__)
        assert PROJECT["scripts"][p["identifier"]] == "minirag.cli:main"  # what `uvx minirag` runs


def test_both_transports_start_what_the_cli_serves():
    stdio, http = DOC["packages"]
    assert stdio["transport"] == {"type": "stdio"} and "packageArguments" not in stdio  # a bare minirag-mcp
    assert http["transport"]["type"] == "streamable-http" and http["transport"]["url"].endswith("/mcp")
    argv = []
    for a in http["packageArguments"]:
        argv += [a["value"]] if a["type"] == "positional" else [a["name"], a["default"]]
        if a["type"] == "named":
            assert "{" + a["valueHint"] + "}" in http["transport"]["url"]
    parsed = build_parser().parse_args(argv)
    assert (parsed.cmd, parsed.http) == ("serve", "8000")


def test_environment_variables_are_the_settings_table():
    for p in DOC["packages"]:
        env = {v["name"]: v for v in p["environmentVariables"]}
        assert list(env) == [s.name for s in user_settings()]
        assert not any(n.startswith("MINIRAG_TEST_") for n in env)
        for name, v in env.items():
            assert v["description"] == SETTINGS[name].help.replace("`", ""), name
            assert v["isSecret"] is SETTINGS[name].secret and v["isRequired"] is False
        assert env["MINIRAG_PUBLIC_URL"]["format"] == "string" and env["MAX_FILE_SIZE"]["format"] == "number"
