"""Basic Auth at the ingress gateway (`auth.mode: basic`), with rotation, failing closed.

The gateway's Envoy checks credentials with its `envoy.filters.http.basic_auth` filter
(built into Istio 1.30.3's proxy: istio/proxy 81864a1c, bazel/extension_config/
extensions_build_config.bzl). The filter reads htpasswd lines with `{SHA}` hashes only
(envoy source/extensions/filters/http/basic_auth/config.cc readHtpasswd; duplicate users are
refused, so each credential generation has a username of its own), so the plaintext password
lives only in the clients' Secret and the secret outputs. An EnvoyFilter in the ingress
gateway's namespace adds the filter, disabled, and enables it on the service's hosts only.

Why it fails closed. That proxy is Envoy 1.38.4-dev (istio/proxy 81864a1c ENVOY_VERSION.txt,
WORKSPACE ENVOY_SHA 4f1e006e); the filter's `emit_dynamic_metadata` and `allow_missing` came in
Envoy 1.39.0 (envoy changelogs/1.39.0.yaml, area basic_auth; absent from 1.38.0-1.38.3), so no
metadata can tell the gateway's RBAC that the filter ran. Instead the filter, on success,
replaces the Authorization header with the username it accepted (`forward_username_header:
authorization`; basic_auth_filter.cc decodeHeaders `headers.setCopy(...)`), after the route
was chosen on the original header (resolveMostSpecificPerFilterConfig caches it; the filter
never clears the route cache). An AuthorizationPolicy on the gateway (DENY on the service's
hosts unless the Authorization header is exactly an accepted username) then refuses every
request the filter did not accept: a patch that istiod skips or that matches no virtual host
leaves `Basic ...` in the header, and the gateway's RBAC answers 403. A request that sends a
bare username to get past the RBAC takes no forwarding route, which needs a `Basic <base64>`
value (routes.py BASIC_CREDENTIAL); one that sends a bare username beside a `Basic` value is
denied by the policy's `Basic *` rule whether the route matches the joined values (Envoy 1.38)
or each value (Envoy 1.39 `match_headers_individually`).
"""

import base64
import hashlib
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from inference_platform.core import endpoints as ep
from inference_platform.core.common import resource_opts
from inference_platform.settings.serving import AuthSettings, BasicAuthRotation

# envoy api/envoy/extensions/filters/http/basic_auth/v3/basic_auth.proto
BASIC_AUTH_TYPE = "type.googleapis.com/envoy.extensions.filters.http.basic_auth.v3.BasicAuth"
BASIC_AUTH_PER_ROUTE_TYPE = "type.googleapis.com/envoy.extensions.filters.http.basic_auth.v3.BasicAuthPerRoute"
# envoy api/envoy/config/route/v3/route.proto FilterConfig: a filter marked `disabled` in the
# listener runs where a route or virtual host names it with a config of its own.
FILTER_CONFIG_TYPE = "type.googleapis.com/envoy.config.route.v3.FilterConfig"
HCM = "envoy.filters.network.http_connection_manager"
# What the filter writes the accepted username into: the credential's own header, so the
# password never travels past the gateway and the gateway's RBAC reads who was accepted.
FORWARD_USERNAME_HEADER = "authorization"


def credential_username(name: str, generation: int) -> str:
    """Generation 1 keeps the name it always had; later ones get `-g<n>` (Envoy refuses a user twice)."""
    return name if generation == 1 else f"{name}-g{generation}"


def htpasswd_line(username: str, password: str) -> str:
    """`user:{SHA}<base64 SHA-1>`, what Envoy compares (basic_auth_filter.cc validateUser)."""
    digest = base64.b64encode(hashlib.sha1(password.encode()).digest()).decode()
    return f"{username}:{{SHA}}{digest}"


def basic_auth_filter_name(namespace: str, name: str) -> str:
    return f"inference-platform.basic-auth.{namespace}.{name}"


# The listener-level users: a hash no password is known for (twenty zero bytes), since the filter
# is off there and each virtual host that turns it on brings its own users (BasicAuthPerRoute
# replaces them, envoy basic_auth_filter.cc). A rotation thus changes only the route
# configuration (RDS), not the listener, whose every change drains the gateway's connections.
PLACEHOLDER_HTPASSWD = "inference-platform-no-user:{SHA}" + base64.b64encode(bytes(20)).decode() + "\n"


def envoy_filter_spec(filter_name: str, hosts: list[str], htpasswd: str) -> dict:
    """Istio EnvoyFilter (networking.istio.io/v1alpha3, istio/api 1.30.3 envoy_filter.proto):
    the gateway's HTTP connection manager gets the filter, disabled, first of its HTTP filters
    (INSERT_FIRST: before Istio's ext_authz, authn and RBAC filters, istio/istio 1.30.3
    pilot/pkg/networking/core/listener_builder.go, whatever of them a gateway has), with the
    placeholder users; each virtual host serving one of `hosts` (matched by domain, on every
    port, even when Istio collapses hosts with the same routes into one virtual host) turns it on
    with the service's users."""
    users = {"inline_string": htpasswd}
    insert = {
        "applyTo": "HTTP_FILTER",
        "match": {"context": "GATEWAY", "listener": {"filterChain": {"filter": {"name": HCM}}}},
        "patch": {"operation": "INSERT_FIRST",
                  "value": {"name": filter_name, "disabled": True,
                            "typed_config": {"@type": BASIC_AUTH_TYPE, "users": {"inline_string": PLACEHOLDER_HTPASSWD},
                                             "forward_username_header": FORWARD_USERNAME_HEADER}}},
    }
    enable = [{
        "applyTo": "VIRTUAL_HOST",
        "match": {"context": "GATEWAY", "routeConfiguration": {"vhost": {"domainName": host}}},
        "patch": {"operation": "MERGE",
                  "value": {"typed_per_filter_config": {filter_name: {
                      "@type": FILTER_CONFIG_TYPE,
                      "config": {"@type": BASIC_AUTH_PER_ROUTE_TYPE, "users": users}}}}},
    } for host in hosts]
    return {"configPatches": [insert, *enable]}


# Any Authorization value the filter left in Basic form: Istio turns a trailing `*` into a prefix
# match (istio/istio 1.30.3 pilot/pkg/security/authz/matcher/header.go HeaderMatcher).
BASIC_LEFT = "Basic *"


def gateway_policy_spec(hosts: list[str], username: str) -> dict:
    """Istio AuthorizationPolicy (security.istio.io/v1): DENY a request to one of `hosts` whose
    Authorization header is not a username of the service, `<name>` or `<name>-g<n>` of any
    generation, i.e. one the basic_auth filter did not write (it writes only a username it
    accepted, and the per-host users hold only the accepted generations). Naming every
    generation keeps the policy the same through a rotation, so the gateway's listener (its RBAC
    filter) does not change and its connections are not drained. Istio makes `notValues` a NOT of exact header matches (istio/istio 1.30.3
    pilot/pkg/security/authz/model/model.go rule.principal, generator.go requestHeaderGenerator),
    so a missing header is denied too; `hosts` match `:authority` exactly, ignoring case
    (authz/matcher/header.go HostMatcher), hence `<host>:*` for a Host that names a port.

    A second rule denies a request to those hosts with any `Basic ...` Authorization value: the
    filter replaces every value with the username it accepted (setCopy), so one left means it did
    not run. RBAC matches each value of a repeated header on its own (Envoy 1.38
    `rbac_match_headers_individually`), so `Basic x` beside an accepted username is denied too.
    Without it that request would rest on the route refusing the joined value `Basic x,<user>`,
    which Envoy 1.39 gives up (changelogs/1.39.0.yaml `match_headers_individually`: a route's
    header matcher then matches each value, so the forwarding route takes `Basic x`)."""
    authorities = [a for h in hosts for a in (h, f"{h}:*")]
    header = f"request.headers[{FORWARD_USERNAME_HEADER}]"
    to = [{"operation": {"hosts": authorities}}]
    return {"action": "DENY",
            "rules": [{"to": to, "when": [{"key": header, "notValues": [username, f"{username}-g*"]}]},
                      {"to": to, "when": [{"key": header, "values": [BASIC_LEFT]}]}]}


def accepted_generations(rotation: BasicAuthRotation) -> list[int]:
    """The generations the gateway accepts: the current one and, during a rotation, the previous."""
    return [rotation.generation] + ([rotation.previous] if rotation.previous is not None else [])


def _password(parent: pulumi.Resource, name: str, generation: int) -> random.RandomPassword:
    # Generation 1 keeps the logical name of the password made before rotation existed.
    logical = f"{name}-password" if generation == 1 else f"{name}-password-g{generation}"
    return random.RandomPassword(logical, length=32, special=False, opts=pulumi.ResourceOptions(parent=parent))


def gateway_selector(ingress_namespace: str, gateway_pods: Optional[dict[str, str]]) -> Optional[dict]:
    """The selector of the gateway's DENY policy. In Istio's root namespace a policy without one
    applies to every workload of the mesh (istio/istio 1.30.3 pilot/pkg/model/authorization.go:
    root-namespace policies are looked up for every workload), so each change of it (a service
    added, a rotation) would reach every sidecar; a selector there matches pods in any namespace,
    so it names the gateway's pods: the platform's ingress gateway (the gateway chart labels its
    pods `istio: <release without istio->`, gateway 1.30.3 templates/_helpers.tpl
    gateway.selectorLabels) or an LLM service's Gateway, whose pods istiod labels
    `gateway.networking.k8s.io/gateway-name: <gateway>` (istiod 1.30.3 files/kube-gateway.yaml).
    Elsewhere the policy stays without one: it applies to that namespace's workloads, the
    gateway's pods whatever their labels."""
    if ingress_namespace != ep.ISTIO_NAMESPACE:
        return None
    return {"matchLabels": dict(gateway_pods or ep.INGRESS_POD_LABELS)}


def basic_auth(parent: pulumi.Resource, name: str, username: str, namespace: str, labels: dict, auth: AuthSettings,
               hosts: list[str], ingress_namespace: str, gateway_pods: Optional[dict[str, str]] = None,
               ) -> tuple[Optional[pulumi.Output], Optional[str], list[pulumi.Resource]]:
    """With auth mode `basic`: a password per accepted generation, the Secret with the current
    credential for clients in `namespace`, the gateway's EnvoyFilter that accepts every accepted
    generation on `hosts` and the gateway's AuthorizationPolicy that denies what it did not
    accept, on the pods `gateway_pods` labels (default: the platform's ingress gateway's);
    returns the credentials (secret), the Secret's name and what the routes must wait for (both:
    routes that admit any Basic credential must not exist before what checks it). Nothing
    otherwise."""
    if auth.mode != "basic":
        return None, None, []
    rotation = auth.basic or BasicAuthRotation()
    passwords = {g: _password(parent, name, g) for g in accepted_generations(rotation)}
    current_user = credential_username(username, rotation.generation)
    current = passwords[rotation.generation].result
    secret_name = f"{username}-basic-auth"
    lines = [pulumi.Output.from_input(p.result).apply(lambda pw, g=g: htpasswd_line(credential_username(username, g), pw))
             for g, p in passwords.items()]
    # SHA-1 of a 32-character random password cannot be turned back into it: the hashes stay
    # readable in the plan and the state, so a rotation's diff shows which lines change.
    htpasswd = pulumi.Output.unsecret(pulumi.Output.all(*lines).apply(lambda ls: "\n".join(ls) + "\n"))
    filter_name = basic_auth_filter_name(namespace, username)
    envoy_filter = k8s.apiextensions.CustomResource(
        f"{name}-basic-auth-filter",
        api_version="networking.istio.io/v1alpha3",
        kind="EnvoyFilter",
        # Dots: namespace and name are DNS labels, so no two workloads share this name.
        metadata={"name": f"basic-auth.{namespace}.{username}", "namespace": ingress_namespace, "labels": labels},
        spec=htpasswd.apply(lambda h: envoy_filter_spec(filter_name, hosts, h)),
        opts=resource_opts(parent),
    )
    spec = gateway_policy_spec(hosts, username)
    selector = gateway_selector(ingress_namespace, gateway_pods)
    gateway_policy = k8s.apiextensions.CustomResource(
        f"{name}-basic-auth-policy",
        api_version="security.istio.io/v1",
        kind="AuthorizationPolicy",
        metadata={"name": f"basic-auth.{namespace}.{username}", "namespace": ingress_namespace, "labels": labels},
        spec={"selector": selector, **spec} if selector else spec,
        # After the filter that writes the usernames it accepts, or the first rollout would deny
        # the clients that the routes' exact credential let through until then.
        opts=resource_opts(parent, depends_on=[envoy_filter]),
    )
    # The clients' credential changes only once the filter and the policy that accept it are
    # written (a rotation's new username, or a revocation's), so a client that reads the Secret
    # meets a gateway that istiod is already updating, not one that has not heard of it yet.
    k8s.core.v1.Secret(
        f"{name}-basic-auth",
        metadata={"name": secret_name, "namespace": namespace, "labels": labels},
        type="kubernetes.io/basic-auth",
        string_data={"username": current_user, "password": current},
        opts=resource_opts(parent, depends_on=[envoy_filter, gateway_policy]),
    )
    credentials = pulumi.Output.secret(current.apply(lambda p: {"username": current_user, "password": p}))
    return credentials, secret_name, [envoy_filter, gateway_policy]
