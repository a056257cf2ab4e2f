"""Mesh security every workload behind the ingress gateway shares (Triton services, graphs).

STRICT mTLS with the metrics port left to Prometheus, the ingress gateway as the only caller,
and JWT checks (`auth.mode: jwt`); Basic Auth (`auth.mode: basic`) is the gateway's, in basic_auth.py.
"""

from typing import Callable

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


# Where a proxy reads the token: the Authorization header's Bearer value only. Without a location
# Envoy also takes the `access_token` query parameter (go-control-plane jwt_authn/v3 config.pb.go
# JwtProvider "default locations"; Istio passes fromHeaders and fromParams through as given,
# istio 1.30.3 pilot/pkg/security/authn/policy_applier.go), and a URL ends up in traces and logs.
TOKEN_FROM_HEADERS = [{"name": "Authorization", "prefix": "Bearer "}]


def jwt_rule(jwt: JwtAuth, **more) -> dict:
    """A RequestAuthentication jwtRule: the issuer, its key set, the token from the Bearer header
    only, and the audiences where given."""
    rule = {"issuer": jwt.issuer, "jwksUri": jwt.jwks_uri, "fromHeaders": TOKEN_FROM_HEADERS, **more}
    if jwt.audiences:
        rule["audiences"] = list(jwt.audiences)
    return rule


def request_authentication_spec(selector: dict[str, str], jwt: JwtAuth) -> dict:
    return {"selector": {"matchLabels": selector}, "jwtRules": [jwt_rule(jwt)]}


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
