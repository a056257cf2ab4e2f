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

Python's `re` agrees with RE2 on the patterns the platform renders (no backreferences or
lookaround); the evaluator refuses a field it does not model rather than ignore it.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Optional

_PCHAR = r"a-zA-Z0-9\-._~%!$&'()+,;:@="


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


def _clause_matches(clause: Mapping, path: str, headers: Mapping[str, str]) -> bool:
    unknown = set(clause) - {"uri", "headers"}
    assert not unknown, f"HTTPMatchRequest fields not modelled: {unknown}"
    if "uri" in clause and not _string_match(clause["uri"], path):
        return False
    return all(_string_match(spec, headers.get(name.lower())) for name, spec in clause.get("headers", {}).items())


def route(vs_spec: Mapping, path: str, headers: Mapping[str, str]) -> tuple[str, int]:
    """("forward", destination port) or ("status", HTTP status) for a request; 404 when no rule
    matches (Envoy's answer for a request no route takes)."""
    for rule in vs_spec["http"]:
        matches = rule.get("match")
        if matches and not any(_clause_matches(c, path, headers) for c in matches):
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


def _source_matches(source: Mapping, principal: str) -> bool:
    unknown = set(source) - {"principals", "requestPrincipals", "namespaces"}
    assert not unknown, f"Source fields not modelled: {unknown}"
    if "principals" in source and not any(istio_string_match(p, principal) for p in source["principals"]):
        return False
    # A SPIFFE principal names its namespace: cluster.local/ns/<namespace>/sa/<account>.
    namespace = principal.split("/ns/", 1)[-1].split("/", 1)[0] if "/ns/" in principal else None
    if "namespaces" in source and not any(istio_string_match(n, namespace) for n in source["namespaces"]):
        return False
    # requestPrincipals: the caller is taken to hold a token the RequestAuthentication accepted.
    return True


def _operation_matches(operation: Mapping, port: int, path: str) -> bool:
    unknown = set(operation) - {"ports", "notPorts", "paths", "notPaths"}
    assert not unknown, f"Operation fields not modelled: {unknown}"
    if "ports" in operation and str(port) not in operation["ports"]:
        return False
    if str(port) in operation.get("notPorts", []):
        return False
    if "paths" in operation and not any(istio_string_match(p, path, path=True) for p in operation["paths"]):
        return False
    return not any(istio_string_match(p, path, path=True) for p in operation.get("notPaths", []))


def _rule_matches(rule: Mapping, principal: str, port: int, path: str) -> bool:
    assert "when" not in rule, "conditions are not modelled"
    sources = [f["source"] for f in rule.get("from", [])]
    operations = [t["operation"] for t in rule.get("to", [])]
    return ((not sources or any(_source_matches(s, principal) for s in sources))
            and (not operations or any(_operation_matches(o, port, path) for o in operations)))


def allowed(policies: Iterable[Mapping], principal: str, port: int, path: str) -> bool:
    """Whether the workload's sidecar admits a request from `principal` to `port` and `path`,
    under the AuthorizationPolicy specs that apply to it."""
    policies = list(policies)
    actions = {p.get("action", "ALLOW") for p in policies}
    assert actions <= {"ALLOW", "DENY"}, f"actions not modelled: {actions}"
    rules = lambda action: [r for p in policies if p.get("action", "ALLOW") == action for r in p.get("rules", [])]  # noqa: E731
    if any(_rule_matches(r, principal, port, path) for r in rules("DENY")):
        return False
    if "ALLOW" not in actions:
        return True
    return any(_rule_matches(r, principal, port, path) for r in rules("ALLOW"))
