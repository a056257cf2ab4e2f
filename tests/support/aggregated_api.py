"""A stand-in for the server behind an aggregated API (an APIService backed by a Service), for the real
tier: KWOK runs no container, so Kueue's visibility server and prometheus-adapter never answer, and the
API server's namespace controller then refuses to finish any namespace's deletion
(NamespaceDeletionDiscoveryFailure). On a real cluster those pods answer discovery while they run; this
answers it, empty, at the Service's cluster IP, inside the test's network namespace.

Run as `python -m tests.support.aggregated_api <address> <port> <group/version>...`; it serves until
killed. Only APIServices that skip TLS verification (what both charts render without cert-manager) can
be stood in for: the server's certificate is self-signed.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import tempfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def discovery(group_versions: list[str]) -> dict[str, dict]:
    """The legacy discovery documents of the given group/versions, by path: what the kube-aggregator
    falls back to when a backend does not answer aggregated discovery (an APIGroupList content type)."""
    groups: dict[str, list[str]] = {}
    for gv in group_versions:
        group, version = gv.split("/")
        groups.setdefault(group, []).append(version)
    docs: dict[str, dict] = {}
    listed = []
    for group, versions in groups.items():
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        api_group = {"name": group, "versions": entries, "preferredVersion": entries[0]}
        listed.append(api_group)
        docs[f"/apis/{group}"] = {"kind": "APIGroup", "apiVersion": "v1", **api_group}
        for v in versions:
            docs[f"/apis/{group}/{v}"] = {"kind": "APIResourceList", "apiVersion": "v1",
                                          "groupVersion": f"{group}/{v}", "resources": []}
    docs["/apis"] = {"kind": "APIGroupList", "apiVersion": "v1", "groups": listed}
    return docs


def serve(address: str, port: int, group_versions: list[str]) -> None:
    docs = discovery(group_versions)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            doc = docs.get(self.path.split("?")[0].rstrip("/") or "/")
            body = json.dumps(doc if doc is not None else {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                                           "reason": "NotFound", "code": 404}).encode()
            self.send_response(200 if doc is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with tempfile.TemporaryDirectory() as tmp:
        cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=aggregated-api-stand-in", "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server = ThreadingHTTPServer((address, port), Handler)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        print("serving", flush=True)
        server.serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
