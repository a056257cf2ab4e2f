"""A real S3-compatible HTTP server on loopback for the bucket and upload tests.

moto's server mode, with request authentication switched on so bad credentials are
refused as a real endpoint would: two IAM users in two accounts (ours and a
stranger's) are created first, then every request must be signed by one of them.

Test modules load the `s3_server` fixture with `pytest_plugins = ["tests.s3server"]`:
one server per kind for the whole session, parametrised over `SERVERS`, so another
S3-compatible implementation is one more entry there.
"""

from __future__ import annotations

import contextlib
import json
import logging
import urllib.request
from dataclasses import dataclass

import boto3
import pytest

from tests.netutil import free_port

OUR_ACCOUNT = "123456789012"
OTHER_ACCOUNT = "210987654321"
ADMIN_POLICY = json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    access_key_id: str
    secret_access_key: str
    other_access_key_id: str
    other_secret_access_key: str
    region: str = "us-east-1"

    def props(self, **extra) -> dict:
        """Bucket/upload resource properties pointing at this server with our credentials."""
        return {"endpoint": self.endpoint, "region": self.region, "accessKeyId": self.access_key_id,
                "secretAccessKey": self.secret_access_key, **extra}

    def client(self, other: bool = False):
        key, secret = (self.other_access_key_id, self.other_secret_access_key) if other else (self.access_key_id, self.secret_access_key)
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=self.region,
                            aws_access_key_id=key, aws_secret_access_key=secret)


def _iam_user(endpoint: str, account: str) -> tuple[str, str]:
    iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                       aws_access_key_id="setup", aws_secret_access_key="setup")
    # moto places unauthenticated requests in the account this header names.
    iam.meta.events.register("before-sign.iam.*", lambda request, **_: request.headers.__setitem__("x-moto-account-id", account))
    iam.create_user(UserName="weights")
    iam.put_user_policy(UserName="weights", PolicyName="all", PolicyDocument=ADMIN_POLICY)
    key = iam.create_access_key(UserName="weights")["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


def start_server(auth: bool = True):
    """Start moto on a free loopback port (authentication on unless told); return (server, S3Server)."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    ours = _iam_user(endpoint, OUR_ACCOUNT)
    theirs = _iam_user(endpoint, OTHER_ACCOUNT)
    if auth:
        set_auth(endpoint, "0")
    return server, S3Server(endpoint, *ours, *theirs)


def set_auth(endpoint: str, free_requests: str) -> None:
    """Requests moto serves before it starts checking signatures and policies ("inf": never)."""
    req = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=free_requests.encode(), method="POST",
                                 headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(req).read()


@contextlib.contextmanager
def running_server(auth: bool = True):
    """A started server for the duration of the block (a test module's fixture wraps this)."""
    server, info = start_server(auth)
    try:
        yield info
    finally:
        # Later servers in the same process must not inherit authentication.
        set_auth(info.endpoint, "inf")
        server.stop()


# Each kind of server: a context manager yielding an S3Server with our and a stranger's credentials.
SERVERS = {"moto": running_server}


@pytest.fixture(scope="session", params=sorted(SERVERS))
def s3_server(request):
    """A running S3-compatible server on loopback, shared by every test of the session."""
    with SERVERS[request.param]() as server:
        yield server
