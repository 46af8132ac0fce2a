#!/usr/bin/env python3
"""Write server.json, the MCP Registry's description of minirag, from the package metadata (pyproject.toml,
`minirag.__version__`) and the settings table (`minirag.config.SETTINGS`): both transports, every variable a user
sets, with its help as the description.

    python tools/server_json.py           # write server.json
    python tools/server_json.py --check   # exit 1 if server.json differs from the rendering
"""

import json, sys, tomllib
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from minirag import __version__  # noqa: E402
from minirag.config import user_settings  # noqa: E402

SERVER_JSON = ROOT / "server.json"
SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
FORMATS = {
    "whole": "number",
    "number": "number",
    "flag": "boolean",
    "switch": "boolean",
    "present": "boolean",
    "path": "filepath",
}
DEFAULT_PORT = "8000"
# The namespace while pyproject names no repository: the registry refuses a .invalid name, so nothing is published
# under it by mistake; setting [project.urls] Repository gives the real one.
UNPUBLISHED = "invalid.example"


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def short_description(text: str) -> str:
    "The registry takes at most 100 characters: the package description up to its first comma."
    return text.split(",")[0].strip()


def env_vars() -> list[dict]:
    "One registry variable per user setting, its help (without Markdown) as the description."
    out = []
    for s in user_settings():
        v = {
            "name": s.name,
            "description": s.help.replace("`", ""),
            "isRequired": False,
            "isSecret": s.secret,
            "format": FORMATS.get(s.parse, "string"),
        }
        if isinstance(s.default, (str, int, float)) and not isinstance(s.default, bool) and s.shown is None:
            v["default"] = str(s.default)
        out.append(v)
    return out


def render() -> dict:
    p = project()
    urls = p.get("urls", {})
    host = urlsplit(urls.get("Repository", "")).hostname
    package = {"registryType": "pypi", "identifier": p["name"], "version": __version__}
    http_args = [
        {"type": "positional", "value": "serve"},
        {
            "type": "named",
            "name": "--http",
            "valueHint": "port",
            "default": DEFAULT_PORT,
            "isRequired": True,
            "description": "serve Streamable HTTP at /mcp on 127.0.0.1:PORT (any other address needs a token)",
        },
    ]
    return {
        "$schema": SCHEMA,
        "name": (".".join(reversed(host.split("."))) if host else UNPUBLISHED) + "/" + p["name"],  # the project's domain
        "title": p["name"],
        "description": short_description(p["description"]),
        "version": __version__,
        **({"websiteUrl": urls["Documentation"]} if urls.get("Documentation") else {}),
        "packages": [
            {**package, "transport": {"type": "stdio"}, "environmentVariables": env_vars()},
            {
                **package,
                "transport": {"type": "streamable-http", "url": "http://localhost:{port}/mcp"},
                "packageArguments": http_args,
                "environmentVariables": env_vars(),
            },
        ],
    }


def text() -> str:
    return json.dumps(render(), indent=2, ensure_ascii=False) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        ok = SERVER_JSON.exists() and SERVER_JSON.read_text(encoding="utf-8") == text()
        print(
            "server.json matches the package and the settings table"
            if ok
            else "server.json is out of date: run `python tools/server_json.py`"
        )
        return 0 if ok else 1
    SERVER_JSON.write_text(text(), encoding="utf-8")
    print(f"wrote {SERVER_JSON}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
