"""Mesh security every workload behind the ingress gateway shares (Triton services, graphs).

STRICT mTLS with the metrics port left to Prometheus, the ingress gateway as the only caller,
JWT checks (`auth.mode: jwt`), and Basic Auth checked by the gateway's route (`auth.mode: basic`).
"""

import base64
from typing import Callable

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from inference_platform.core.common import resource_opts
from inference_platform.settings.serving import AuthSettings, JwtAuth

# Istio sidecar ports Prometheus scrapes besides a workload's own metrics.
ISTIO_METRICS_PORTS = (15020, 15090)


def ingress_source(auth: AuthSettings, ingress_principal: str) -> dict:
    """The ingress gateway as an AuthorizationPolicy source; with JWT auth, only requests
    that carry a token the RequestAuthentication accepted."""
    source: dict = {"principals": [ingress_principal]}
    if auth.mode == "jwt":
        source["requestPrincipals"] = ["*"]
    return source


def peer_authentication_spec(selector: dict[str, str], metrics_port: int | tuple[int, ...]) -> dict:
    """STRICT mTLS for the selected pods, but for the ports Prometheus scrapes without a mesh identity."""
    ports = metrics_port if isinstance(metrics_port, tuple) else (metrics_port,)
    return {"selector": {"matchLabels": selector}, "mtls": {"mode": "STRICT"},
            "portLevelMtls": {str(p): {"mode": "PERMISSIVE"} for p in ports}}


def request_authentication_spec(selector: dict[str, str], jwt: JwtAuth) -> dict:
    rule = {"issuer": jwt.issuer, "jwksUri": jwt.jwks_uri}
    if jwt.audiences:
        rule["audiences"] = list(jwt.audiences)
    return {"selector": {"matchLabels": selector}, "jwtRules": [rule]}


def declare_mesh_security(custom: Callable[[str, str, str, dict], object], selector: dict[str, str],
                          metrics_port: int | tuple[int, ...], authorization: dict, auth: AuthSettings) -> None:
    """A workload's mesh security through `custom(role, apiVersion, kind, spec)`: STRICT mTLS
    (PeerAuthentication), the AuthorizationPolicy `authorization`, and with jwt auth the
    RequestAuthentication that checks tokens."""
    custom("peerauthentication", "security.istio.io/v1", "PeerAuthentication", peer_authentication_spec(selector, metrics_port))
    custom("authorizationpolicy", "security.istio.io/v1", "AuthorizationPolicy", authorization)
    if auth.mode == "jwt":
        custom("requestauthentication", "security.istio.io/v1", "RequestAuthentication",
               request_authentication_spec(selector, auth.jwt))


def basic_authorization(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def basic_auth(parent: pulumi.Resource, name: str, username: str, namespace: str, labels: dict, auth: AuthSettings):
    """With auth mode `basic`: generated credentials, a Secret with them for clients in
    `namespace`, and the Authorization header they make (secret). Nothing otherwise."""
    if auth.mode != "basic":
        return None, None, None
    password = random.RandomPassword(f"{name}-password", length=32, special=False, opts=pulumi.ResourceOptions(parent=parent))
    secret_name = f"{username}-basic-auth"
    k8s.core.v1.Secret(
        f"{name}-basic-auth",
        metadata={"name": secret_name, "namespace": namespace, "labels": labels},
        type="kubernetes.io/basic-auth",
        string_data={"username": username, "password": password.result},
        opts=resource_opts(parent),
    )
    authorization = pulumi.Output.secret(password.result.apply(lambda p: basic_authorization(username, p)))
    credentials = pulumi.Output.secret(password.result.apply(lambda p: {"username": username, "password": p}))
    return authorization, credentials, secret_name
