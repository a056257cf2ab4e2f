"""The policy pack offline: its config for a stack, and a run over a rendered plan.

`policy_config(settings)` is the file `pulumi preview --policy-pack policies
--policy-pack-config <file>` reads: per policy its enforcement level and the stack
facts the resources cannot show (production, GPU quota, GPU groups).

`run_policies(plan_json, config)` builds the Policy SDK's own argument objects from
resources.json (ResourceValidationArgs per resource, StackValidationArgs with
PolicyResources whose parents and dependencies are resolved) and calls every
policy's validate, as the CLI's analyzer does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
)
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from inference_platform.settings.stack import Settings
from policies.rules import ALL_POLICIES
from policies.rules.kube import DEFAULTS


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str
    message: str
    urn: Optional[str]

    @property
    def resource(self) -> str:
        """`<type>::<name>` of the URN, or the stack as a whole."""
        return self.urn.split("::", 2)[-1] if self.urn else "(stack)"


# --------------------------------------------------------------------------- config


def stack_facts(settings: Settings) -> dict[str, Any]:
    """What the policies need to know about a stack that its resources do not show."""
    from inference_platform.gpu.profiles import slots_per_node

    facts: dict[str, Any] = {
        "production": settings.production,
        "gpuGroups": {
            g.name: {"gpusPerNode": g.gpu.per_node, "maxNodes": g.max_nodes, "resources": sorted(slots_per_node(g)),
                     "selector": dict(g.selector)}
            for g in settings.gpu_groups
        },
    }
    if settings.cluster.gpu_quota is not None:
        facts["gpuQuota"] = settings.cluster.gpu_quota
    return facts


def policy_config(settings: Settings) -> dict[str, dict[str, Any]]:
    """Policy-pack config: `{policy: {enforcementLevel, <facts its schema declares>}}`."""
    facts = stack_facts(settings)
    overrides = settings.policies.enforcement
    config = {}
    for policy in ALL_POLICIES:
        entry: dict[str, Any] = {"enforcementLevel": overrides.get(policy.name, policy.enforcement_level.value)}
        declared = policy.config_schema.properties if policy.config_schema else {}
        entry.update({k: v for k, v in facts.items() if k in declared})
        config[policy.name] = entry
    return config


# --------------------------------------------------------------------------- SDK arguments


def _options(r: dict[str, Any]) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=bool(r.get("protect")),
        ignore_changes=list(r.get("ignoreChanges") or []),
        delete_before_replace=r.get("deleteBeforeReplace"),
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
        parent=r.get("parent"),
    )


def _stack_props(r: dict[str, Any]) -> dict[str, Any]:
    """A stack policy sees a resource's state: its inputs plus the name the object got."""
    props = dict(r.get("inputs") or {})
    name = ((r.get("outputs") or {}).get("metadata") or {}).get("name")
    if name:
        props["metadata"] = {**(props.get("metadata") or {}), "name": name}
    return props


def policy_resources(resources: list[dict[str, Any]]) -> list[PolicyResource]:
    """PolicyResources with parent and dependencies pointing at each other."""
    raw = {r["urn"]: r for r in resources}
    out = [
        PolicyResource(
            r["type"], unknown_checking_proxy(_stack_props(r)), r["urn"], r["name"], _options(r),
            _provider(r, raw), None, [], {},
        )
        for r in resources
    ]
    by_urn = {p.urn: p for p in out}
    for r, p in zip(resources, out, strict=True):
        p.parent = by_urn.get(r.get("parent"))
        p.dependencies = [by_urn[u] for u in r.get("dependsOn") or [] if u in by_urn]
    return out


def _provider(r: dict[str, Any], by_urn: dict[str, dict[str, Any]]) -> Optional[PolicyProviderResource]:
    p = by_urn.get(r.get("provider") or "")
    if p is None:
        return None
    return PolicyProviderResource(p["type"], unknown_checking_proxy(dict(p.get("inputs") or {})), p["urn"], p["name"])


# --------------------------------------------------------------------------- running


def _level(policy, config: dict[str, Any]) -> str:
    level = (config.get(policy.name) or {}).get("enforcementLevel")
    return level or (policy.enforcement_level or EnforcementLevel.ADVISORY).value


def _policy_config(policy, config: dict[str, Any]) -> dict[str, Any]:
    """The policy's config with schema defaults filled in, as the CLI hands it over."""
    values = {k: v for k, v in (config.get(policy.name) or {}).items() if k != "enforcementLevel"}
    for key in (policy.config_schema.properties if policy.config_schema else {}):
        if key not in values and DEFAULTS.get(key) is not None:
            values[key] = DEFAULTS[key]
    return values


def run_policies(plan_json: dict[str, Any], config: dict[str, Any], policies=None) -> list[Violation]:
    """Every violation of every enabled policy over a plan (resources.json content)."""
    resources = plan_json["resources"]
    by_urn = {r["urn"]: r for r in resources}
    stack_resources = policy_resources(resources)
    violations: list[Violation] = []
    for policy in policies if policies is not None else ALL_POLICIES:
        level = _level(policy, config)
        if level == "disabled":
            continue
        own = _policy_config(policy, config)

        def report(message: str, urn: Optional[str] = None, _p=policy, _l=level) -> None:
            violations.append(Violation(_p.name, _l, message, urn))

        try:
            if isinstance(policy, ResourceValidationPolicy):
                for r in resources:
                    args = ResourceValidationArgs(
                        r["type"], unknown_checking_proxy(dict(r.get("inputs") or {})), r["urn"], r["name"],
                        _options(r), _provider(r, by_urn), own,
                    )
                    policy.validate(args, lambda msg, _urn=None, _r=r: report(msg, _r["urn"]))
            else:
                policy.validate(StackValidationArgs(stack_resources, own), report)
        except (_NotApplicableError, UnknownValueError):
            continue  # as the CLI does: not applicable / not knowable is no violation
    return violations


def format_report(violations: list[Violation], policies=None) -> str:
    """Violations grouped by policy, each with its resource and fix hint; then a summary."""
    names = [p.name for p in (policies if policies is not None else ALL_POLICIES)]
    lines = []
    for name in names:
        found = [v for v in violations if v.policy == name]
        if not found:
            continue
        lines.append(f"{name} ({found[0].level}): {len(found)} violation{'s' if len(found) > 1 else ''}")
        lines += [f"  {v.resource}\n    {v.message}" for v in found]
    mandatory = sum(v.level == "mandatory" for v in violations)
    lines.append(f"{len(names)} policies: {mandatory} mandatory and {len(violations) - mandatory} advisory violations")
    return "\n".join(lines)


def exit_code(violations: list[Violation]) -> int:
    return 1 if any(v.level == "mandatory" for v in violations) else 0
