"""A real PostgreSQL for the lake tests and benchmarks: Debian's server, started in a temporary folder as an
unprivileged user on a free local port, stopped afterwards. No mock, no stand-in.

    with Postgres() as pg:
        url = pg.new_database()      # postgresql://minirag@127.0.0.1:<port>/<fresh database>

Run as root (CI), the server runs as `nobody` (initdb refuses root); otherwise as the current user.
"""

import os, shutil, socket, subprocess, sys, tempfile, uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from system_tools import postgres_bin  # noqa: E402

USER = "minirag"


def need_team_extra():
    "Skip (a failure in CI, which installs it) when the lake's DuckDB extension wheels are missing."
    import importlib.util
    import pytest

    if not all(importlib.util.find_spec(m) for m in ("duckdb_extension_ducklake", "duckdb_extension_postgres_scanner")):
        pytest.skip("the lake's DuckDB extensions are missing (install: pip install 'minirag[team]')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    "One PostgreSQL server in a temporary folder; `settings` become `-c name=value` options of the server."

    def __init__(self, settings: dict | None = None, env: dict | None = None):
        self.bin = postgres_bin()
        if self.bin is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self.settings = settings or {}
        self.env = dict(os.environ, **(env or {}))  # e.g. LOCPATH: where the server finds a locale compiled for it
        self.dir = Path(tempfile.mkdtemp(prefix="minirag-pg-"))
        self.port = None
        self.lake_url = None  # the database a test's lake uses (tests set it)

    def _as_owner(self) -> list[str]:
        if os.geteuid() != 0:
            return []
        return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]

    def _run(self, *cmd, check=True):
        return subprocess.run(
            [*self._as_owner(), *cmd],
            capture_output=True,
            text=True,
            cwd=self.dir,
            check=check,
            timeout=120,
            env=self.env,
        )

    def start(self) -> "Postgres":
        os.chmod(self.dir, 0o777)
        data = self.dir / "data"
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        opts = [f"-p {{port}} -k {self.dir} -h 127.0.0.1 -c fsync=off -c max_connections=200"]
        opts += [f"-c {k}={v}" for k, v in self.settings.items()]
        for _ in range(5):  # a port found free can be taken before the server binds it: try another
            self.port = _free_port()
            r = self._run(
                str(self.bin / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(self.dir / "log"),
                "-w",
                "-t",
                "60",
                "-o",
                opts[0].format(port=self.port) + " " + " ".join(opts[1:]),
                "start",
                check=False,
            )
            if r.returncode == 0:
                return self
        raise RuntimeError(f"PostgreSQL did not start: {r.stderr}\n{(self.dir / 'log').read_text()[-2000:]}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        "A fresh, empty database's URL (one lake each)."
        name = "lake_" + uuid.uuid4().hex[:10]
        subprocess.run(
            [str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, name],
            check=True,
            capture_output=True,
            timeout=60,
        )
        return self.url(name)

    def stop(self):
        if self.port is not None:
            self._run(
                str(self.bin / "pg_ctl"), "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop", check=False
            )
            self.port = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()
