"""A small evaluator of Istio's request matching, for the rendered VirtualServices and
AuthorizationPolicies: which route a request at the ingress gateway takes, and whether the
workload's sidecar then lets it in.

Semantics, Istio 1.30.3 / Envoy:
- VirtualService `http` rules are tried in order; the first whose match list has a clause that
  matches (or that has no match list) decides. `uri` exact, prefix and regex become Envoy's
  path, prefix and safe_regex (pilot/pkg/networking/core/route/route.go TranslateRouteMatch);
  exact and safe_regex compare the path without its query, a regex as an RE2 full match.
  Header matches: exact, prefix, regex (full match); a missing header matches none of them.
- AuthorizationPolicy (istio/api security/v1beta1/authorization_policy.proto): DENY before
  ALLOW; with any ALLOW policy on the workload, a request must match one of its rules. A rule
  matches when one of its sources, one of its operations and all conditions match; a string
  field is exact, `prefix*`, `*suffix` or `*` (presence); a path with `{*}`/`{**}` is an Envoy
  URI template (pilot/pkg/security/authz/matcher/template.go), whose `*` matches one segment of
  RFC 3986 pchars and `**` any run of them and '/' (envoy
  source/extensions/path/uri_template_lib/uri_template_internal.cc kLiteral, toRegexPattern).
  `hosts` match `:authority` ignoring case (pilot/pkg/security/authz/matcher/header.go
  HostMatcher); a `request.headers[...]` condition is an OR of header matches, each exact,
  `prefix*`, `*suffix` or `*` (presence) (matcher/header.go HeaderMatcher), `notValues` its NOT
  (model/model.go rule.principal), so a missing header matches no value and every `notValues`.
  A header sent more than once: RBAC matches each value on its own (Envoy 1.38
  `rbac_match_headers_individually`), so any one can satisfy a match. A route matches the values
  joined with ',' at Envoy 1.38 (source/common/http/header_utility.h getAllOfHeaderAsString), and
  each value on its own from Envoy 1.39 (changelogs/1.39.0.yaml, area http,
  `match_headers_individually`): `route` and `gateway` take `header_values=JOINED` or
  `INDIVIDUAL`, and what must hold whatever the proxy runs is checked under both.
- The gateway's basic_auth filter (envoy source/extensions/filters/http/basic_auth, Envoy 1.38):
  off unless the virtual host enables it; 401 without a valid `Basic` credential, else the
  Authorization header becomes the username (`forward_username_header`). The route was chosen
  before it ran, on the header as sent.

Python's `re` agrees with RE2 on the patterns the platform renders (no backreferences or
lookaround); the evaluator refuses a field it does not model rather than ignore it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Iterable, Mapping, Optional

_PCHAR = r"a-zA-Z0-9\-._~%!$&'()+,;:@="
# How a route's header matcher sees a header sent more than once (Envoy <=1.38: the values joined
# with ','; Envoy >=1.39 `match_headers_individually`: any one value may match).
JOINED, INDIVIDUAL = "joined", "individual"
HEADER_VALUES = (JOINED, INDIVIDUAL)


def _string_match(spec: Mapping, value: Optional[str]) -> bool:
    """A VirtualService StringMatch."""
    unknown = set(spec) - {"exact", "prefix", "regex"}
    assert not unknown, f"StringMatch fields not modelled: {unknown}"
    if value is None:
        return False
    if "exact" in spec:
        return value == spec["exact"]
    if "prefix" in spec:
        return value.startswith(spec["prefix"])
    return re.fullmatch(spec["regex"], value) is not None


def _header_match(spec: Mapping, value: object, header_values: str) -> bool:
    """A route's header match on a header sent once (a string) or several times (a list)."""
    assert header_values in HEADER_VALUES, f"header_values must be one of {HEADER_VALUES}"
    if value is None or isinstance(value, str):
        return _string_match(spec, value)
    if header_values == JOINED:
        return _string_match(spec, ",".join(value))
    return any(_string_match(spec, v) for v in value)


def _clause_matches(clause: Mapping, path: str, headers: Mapping[str, object], header_values: str = JOINED) -> bool:
    unknown = set(clause) - {"uri", "headers"}
    assert not unknown, f"HTTPMatchRequest fields not modelled: {unknown}"
    if "uri" in clause and not _string_match(clause["uri"], path):
        return False
    return all(_header_match(spec, headers.get(name.lower()), header_values)
               for name, spec in clause.get("headers", {}).items())


def route(vs_spec: Mapping, path: str, headers: Mapping[str, object], header_values: str = JOINED) -> tuple[str, int]:
    """("forward", destination port) or ("status", HTTP status) for a request; 404 when no rule
    matches (Envoy's answer for a request no route takes). A header value may be a list (sent
    that many times), matched as `header_values` says."""
    for rule in vs_spec["http"]:
        matches = rule.get("match")
        if matches and not any(_clause_matches(c, path, headers, header_values) for c in matches):
            continue
        if "directResponse" in rule:
            return "status", rule["directResponse"]["status"]
        ports = {d["destination"]["port"]["number"] for d in rule["route"]}
        assert len(ports) == 1, f"rule {rule.get('name')} splits across ports {ports}"
        return "forward", ports.pop()
    return "status", 404


def _template_regex(template: str) -> str:
    out, rest = [], template
    while rest:
        if rest.startswith("{**}"):
            out.append(f"[{_PCHAR}/]*")
            rest = rest[4:]
        elif rest.startswith("{*}"):
            out.append(f"[{_PCHAR}]+")
            rest = rest[3:]
        else:
            out.append(re.escape(rest[0]))
            rest = rest[1:]
    return "".join(out)


def istio_string_match(pattern: str, value: Optional[str], path: bool = False) -> bool:
    """An AuthorizationPolicy string field: exact, prefix*, *suffix, * (presence); for paths
    also URI templates."""
    if value is None or value == "":
        return False
    if path and ("{*}" in pattern or "{**}" in pattern):
        return re.fullmatch(_template_regex(pattern), value) is not None
    if pattern == "*":
        return True
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return value.endswith(pattern[1:])
    return value == pattern


def _source_matches(source: Mapping, principal: str, request_principal: Optional[str]) -> bool:
    unknown = set(source) - {"principals", "requestPrincipals", "namespaces"}
    assert not unknown, f"Source fields not modelled: {unknown}"
    if "principals" in source and not any(istio_string_match(p, principal) for p in source["principals"]):
        return False
    # A SPIFFE principal names its namespace: cluster.local/ns/<namespace>/sa/<account>.
    namespace = principal.split("/ns/", 1)[-1].split("/", 1)[0] if "/ns/" in principal else None
    if "namespaces" in source and not any(istio_string_match(n, namespace) for n in source["namespaces"]):
        return False
    # requestPrincipals: `<iss>/<sub>` of a token this proxy's own jwt_authn accepted (jwt_authn).
    return "requestPrincipals" not in source or any(istio_string_match(p, request_principal)
                                                    for p in source["requestPrincipals"])


def _host_matches(pattern: str, host: Optional[str]) -> bool:
    return host is not None and istio_string_match(pattern.lower(), host.lower())


def _operation_matches(operation: Mapping, port: int, path: str, host: Optional[str], method: Optional[str] = None) -> bool:
    unknown = set(operation) - {"ports", "notPorts", "paths", "notPaths", "hosts", "methods"}
    assert not unknown, f"Operation fields not modelled: {unknown}"
    if "hosts" in operation and not any(_host_matches(h, host) for h in operation["hosts"]):
        return False
    if "ports" in operation and str(port) not in operation["ports"]:
        return False
    if "methods" in operation and method not in operation["methods"]:
        return False
    if str(port) in operation.get("notPorts", []):
        return False
    if "paths" in operation and not any(istio_string_match(p, path, path=True) for p in operation["paths"]):
        return False
    return not any(istio_string_match(p, path, path=True) for p in operation.get("notPaths", []))


def _condition_matches(condition: Mapping, headers: Mapping[str, str]) -> bool:
    key = re.fullmatch(r"request\.headers\[([^\]]+)\]", condition["key"])
    assert key and set(condition) <= {"key", "values", "notValues"}, f"condition not modelled: {condition}"
    value = headers.get(key.group(1).lower())
    sent = [] if value is None else [value] if isinstance(value, str) else list(value)
    # Each value on its own against each pattern (exact, prefix*, *suffix, * for presence).
    match = lambda patterns: any(istio_string_match(p, v) for v in sent for p in patterns)  # noqa: E731
    return (("values" not in condition or match(condition["values"]))
            and ("notValues" not in condition or not match(condition["notValues"])))


def _rule_matches(rule: Mapping, principal: str, port: int, path: str, host: Optional[str],
                  headers: Mapping[str, str], request_principal: Optional[str] = None,
                  method: Optional[str] = None) -> bool:
    sources = [f["source"] for f in rule.get("from", [])]
    operations = [t["operation"] for t in rule.get("to", [])]
    return ((not sources or any(_source_matches(s, principal, request_principal) for s in sources))
            and (not operations or any(_operation_matches(o, port, path, host, method) for o in operations))
            and all(_condition_matches(c, headers) for c in rule.get("when", [])))


def probe_paths(policies: Iterable[Mapping], extra: Iterable[str] = ()) -> list[str]:
    """'/', the given paths and a concrete path for each path pattern the policies name (a
    template's `{*}` and a trailing `*` filled with `1`: a model and a version)."""
    paths = {"/", *extra}
    for policy in policies:
        for rule in policy.get("rules", []):
            for to in rule.get("to", []):
                op = to["operation"]
                for p in [*op.get("paths", []), *op.get("notPaths", [])]:
                    if p != "*":
                        paths.add(p.replace("{**}", "1").replace("{*}", "1").rstrip("*") + ("1" if p.endswith("*") else ""))
    return sorted(paths)


def allowed(policies: Iterable[Mapping], principal: str, port: int, path: str, host: Optional[str] = None,
            headers: Optional[Mapping[str, object]] = None, request_principal: Optional[str] = None,
            method: Optional[str] = None) -> bool:
    """Whether a proxy admits a request from `principal` to `port`, `path` and `host` with
    `headers` and the `request_principal` its jwt_authn set, under the AuthorizationPolicy specs
    that apply to it."""
    policies, headers = list(policies), {k.lower(): v for k, v in (headers or {}).items()}
    actions = {p.get("action", "ALLOW") for p in policies}
    assert actions <= {"ALLOW", "DENY"}, f"actions not modelled: {actions}"
    rules = lambda action: [r for p in policies if p.get("action", "ALLOW") == action for r in p.get("rules", [])]  # noqa: E731
    if any(_rule_matches(r, principal, port, path, host, headers, request_principal, method) for r in rules("DENY")):
        return False
    if "ALLOW" not in actions:
        return True
    return any(_rule_matches(r, principal, port, path, host, headers, request_principal, method) for r in rules("ALLOW"))


def jwt_token(issuer: str, subject: str, audiences: Iterable[str], signed_by: str) -> str:
    """A compact JWT whose signature stands for a key of the JWKS at `signed_by` (the model does
    no cryptography: a proxy accepts the signature when its rule's jwksUri is that one)."""
    def part(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    return ".".join((part({"alg": "RS256"}), part({"iss": issuer, "sub": subject, "aud": list(audiences)}),
                     part({"jwks": signed_by})))


def _claims(token: str) -> Optional[tuple[dict, dict]]:
    try:
        _, payload, signature = token.split(".")
        decode = lambda p: json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))  # noqa: E731
        return decode(payload), decode(signature)
    except ValueError:
        return None


# Where Envoy's jwt_authn looks for a token when a rule names no location (go-control-plane
# jwt_authn/v3 config.pb.go JwtProvider): the Authorization header's Bearer value, then the
# `access_token` query parameter.
DEFAULT_TOKEN_LOCATIONS = {"fromHeaders": [{"name": "Authorization", "prefix": "Bearer "}], "fromParams": ["access_token"]}


def _token(rule: Mapping, headers: Mapping[str, object], query: Mapping[str, str]) -> Optional[str]:
    """The token a rule reads: from its fromHeaders (value after the prefix) and fromParams, or
    from the default locations when it names neither."""
    located = rule if "fromHeaders" in rule or "fromParams" in rule else DEFAULT_TOKEN_LOCATIONS
    for where in located.get("fromHeaders", []):
        value = headers.get(where["name"].lower())
        if isinstance(value, str) and value.startswith(where.get("prefix", "")):
            return value[len(where.get("prefix", "")):]
    return next((query[p] for p in located.get("fromParams", []) if p in query), None)


def jwt_authn(jwt_rules: Iterable[Mapping], headers: Mapping[str, object],
              query: Optional[Mapping[str, str]] = None) -> Optional[tuple[Optional[str], dict]]:
    """A proxy's jwt_authn filter as Istio builds it from the jwtRules of the RequestAuthentications
    that apply to it (istio 1.30.3 pilot/pkg/security/authn/policy_applier.go
    convertToEnvoyJwtConfig): None for its 401, when a token is sent where a rule reads one
    (_token; `query`: the request's query parameters) that no rule accepts (issuer, key set,
    audiences); a missing token passes without a principal. Else (the request principal
    `<iss>/<sub>` or None, the headers sent on): a rule without forwardOriginalToken removes the
    token's header once it verified it (envoy JwtProvider.forward)."""
    rules, headers = list(jwt_rules), {k.lower(): v for k, v in headers.items()}
    for rule in rules:
        unknown = set(rule) - {"issuer", "jwksUri", "audiences", "forwardOriginalToken", "fromHeaders", "fromParams"}
        assert not unknown, f"jwtRule fields not modelled: {unknown}"
    tokens = [t for t in (_token(rule, headers, query or {}) for rule in rules) if t is not None]
    if not tokens:
        return None, headers
    claims = _claims(tokens[0])
    for rule in rules:
        if claims is None:
            break
        payload, signature = claims
        if (payload.get("iss") == rule["issuer"] and signature.get("jwks") == rule["jwksUri"]
                and (not rule.get("audiences") or set(payload.get("aud") or []) & set(rule["audiences"]))):
            if not rule.get("forwardOriginalToken", False):
                headers = {k: v for k, v in headers.items() if k != "authorization"}
            return f"{payload['iss']}/{payload['sub']}", headers
    return None


def basic_auth_users(htpasswd: str) -> dict[str, str]:
    """User -> base64 SHA-1, as Envoy reads an htpasswd (basic_auth/config.cc readHtpasswd)."""
    users: dict[str, str] = {}
    for line in htpasswd.split("\n"):
        if not line or line.startswith("#"):
            continue
        name, _, hashed = line.partition(":")
        assert name not in users, "Envoy refuses a duplicate user"
        assert hashed.startswith("{SHA}") and len(hashed) == 5 + 28, "Envoy accepts {SHA} hashes only"
        users[name] = hashed[5:]
    return users


def basic_auth_filter(htpasswd: str, forward_username_header: str, headers: Mapping[str, object]) -> Optional[dict]:
    """The headers after Envoy's basic_auth filter (basic_auth_filter.cc decodeHeaders), or None
    for its 401: the first Authorization value must be `Basic <base64 user:password>` of a user
    whose SHA-1 matches; the username then replaces `forward_username_header`."""
    authorization = headers.get("authorization")
    if isinstance(authorization, (list, tuple)):
        authorization = authorization[0]
    if authorization is None or not authorization.startswith("Basic "):
        return None
    try:
        decoded = base64.b64decode(authorization[6:] + "==", validate=False).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    username, colon, password = decoded.partition(":")
    digest = base64.b64encode(hashlib.sha1(password.encode()).digest()).decode()
    if not colon or basic_auth_users(htpasswd).get(username) != digest:
        return None
    return {**headers, forward_username_header: username} if forward_username_header else dict(headers)


def gateway(vs_spec: Mapping, gateway_policies: Iterable[Mapping], envoy_filter: Optional[Mapping], host: str,
            path: str, headers: Mapping[str, object], header_values: str = JOINED,
            redirected: bool = False) -> tuple[str, int]:
    """What the ingress gateway does with a request: the route is chosen on the headers as sent
    (a repeated header matched as `header_values` says: JOINED for Envoy 1.38, INDIVIDUAL from
    1.39); the basic_auth filter of `envoy_filter` (an EnvoyFilter spec; None: istiod applied
    none of it) runs first when a VIRTUAL_HOST patch enables it for `host`; then the gateway's
    RBAC. A ("status", 401/403) or the route's answer. A header value may be a list: sent that
    many times.

    `redirected`: the request came in plain HTTP to a server with `tls.httpsRedirect` (the
    virtual host requires TLS, istio 1.30.3 pilot/pkg/networking/core/gateway.go RequireTls).
    Envoy's route is then its SslRedirectRoute, which enables no filter the listener disables
    and carries no per-filter config (envoy source/common/router/config_impl.h: filterDisabled
    `{}`, mostSpecificPerFilterConfig nullptr), so basic_auth does not run, RBAC does, and what
    it lets through gets the 301."""
    headers = {k.lower(): v for k, v in headers.items()}
    chosen = ("status", 301) if redirected else route(vs_spec, path, headers, header_values)
    if envoy_filter is not None and not redirected:
        insert, *enable = envoy_filter["configPatches"]
        typed = insert["patch"]["value"]["typed_config"]
        domains = [p["match"]["routeConfiguration"]["vhost"]["domainName"] for p in enable]
        if host.split(":")[0].lower() in domains:
            per_host = enable[domains.index(host.split(":")[0].lower())]["patch"]["value"]["typed_per_filter_config"]
            users = next(iter(per_host.values()))["config"]["users"]["inline_string"]
            headers = basic_auth_filter(users, typed.get("forward_username_header", ""), headers)
            if headers is None:
                return "status", 401
    if not allowed(gateway_policies, "", 0, path, host=host, headers=headers):
        return "status", 403
    return chosen
