"""A real S3-compatible server for the lake tests: moto's `moto_server` (PyPI `moto[server]`, in the dev extra) on a
free loopback port, with its request signing and IAM checks on, so a wrong key is refused as AWS refuses it.

    with S3() as s3:
        env = s3.env("team")      # AWS_* variables of a user allowed everything, for a fresh bucket "team"

Started in a temporary folder as a subprocess, stopped afterwards.
"""

import json, os, shutil, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(__file__))

ADMIN = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
# the first moto whose server checks the signature of a listing under a prefix (`prefix=team/minirag/`, sent with its
# slashes unencoded and signed with them encoded, by DuckDB's httpfs and boto3 alike) as AWS S3 does: on the query
# encoded again. Up to 5.2.3 it hashes the query as it arrived and refuses the request (SignatureDoesNotMatch), and a
# lake under a prefix fails when a sync's maintenance lists its data path
MOTO = (5, 2, 4)
# requests moto answers before it checks signatures: the test's own setup (user, key, policy, its attachment)
SETUP_REQUESTS = 4


def need_s3_server():
    "Skip (a failure in CI, which installs it: MINIRAG_REQUIRE_SYSTEM_TOOLS=1) when moto's server is missing."
    import importlib.util
    import pytest
    from system_tools import REQUIRE_ENV, required

    install = "install: pip install 'moto[server]==5.2.5'"
    if shutil.which("moto_server") and importlib.util.find_spec("boto3"):  # boto3: moto's own, for the setup requests
        have = _moto_version()
        if have >= MOTO:
            return
        why = f"moto {'.'.join(map(str, have))} refuses a listing under a prefix ({install})"
    else:
        why = f"the S3-compatible test server is missing ({install})"
    if required():
        pytest.fail(f"{REQUIRE_ENV}=1: {why}", pytrace=False)
    pytest.skip(why)


def _moto_version() -> tuple:
    from importlib.metadata import version

    return tuple(int(x) for x in version("moto").split(".")[:3] if x.isdigit())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3:
    "One moto server; `key_id`/`secret` are an IAM user's, allowed everything."

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="minirag-s3-")
        self.proc = self.url = None

    def start(self, wait: float = 60) -> "S3":
        port = _free_port()
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(SETUP_REQUESTS))
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen(
            ["moto_server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.dir,
        )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + wait
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start: {open(self.log.name).read()[-2000:]}")
                time.sleep(0.05)
        iam = self.client("iam", "setup", "setup")
        iam.create_user(UserName="minirag")
        key = iam.create_access_key(UserName="minirag")["AccessKey"]
        arn = iam.create_policy(PolicyName="all", PolicyDocument=ADMIN)["Policy"]["Arn"]
        iam.attach_user_policy(UserName="minirag", PolicyArn=arn)
        self.key_id, self.secret = key["AccessKeyId"], key["SecretAccessKey"]
        return self

    def client(self, service: str = "s3", key_id: str | None = None, secret: str | None = None):
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id=key_id or self.key_id,
            aws_secret_access_key=secret or self.secret,
        )

    def env(self, bucket: str) -> dict:
        "The AWS_* variables of the user, for `bucket`, created now if missing."
        s3 = self.client()
        if bucket not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
            s3.create_bucket(Bucket=bucket)
        return dict(
            AWS_ACCESS_KEY_ID=self.key_id,
            AWS_SECRET_ACCESS_KEY=self.secret,
            AWS_REGION="us-east-1",
            AWS_ENDPOINT_URL=self.url,
        )

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        "Every object key in `bucket` under `prefix`."
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [o["Key"] for p in pages for o in p.get("Contents", [])]

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()


if __name__ == "__main__":  # how reliably it starts here: `python3 tests/s3.py 10`
    times = []
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
        t = time.monotonic()
        with S3() as s3:
            s3.env("probe")
            times.append(time.monotonic() - t)
    print(f"{len(times)} starts, all ready; seconds: " + " ".join(f"{x:.1f}" for x in times))
