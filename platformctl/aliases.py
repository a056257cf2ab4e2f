"""Which old resource a new one takes over through its aliases, the way the Pulumi engine
works it out (pkg/resource/deploy/step_generator.go: generateSteps, generateAliases,
collapseAliasToUrn, inheritedChildAlias; CreateURN in sdk/go/common/resource/alias.go).

A plan records a resource's aliases as the SDK sends them: `{"urn": URN}`, or a spec with
any of `name`, `type`, `stack`, `project`, `parentUrn` and `noParent: true`; an absent
field means the resource's own value. Resources here are plan records (dicts with `urn`,
`type`, `name`, `parent` and `aliases`).

The engine looks a new resource up in the old state by its own URN first, then by each
alias in order; the first old URN found is the one it takes over. Its children inherit
that URN only, not every alias it declared: a child's inherited aliases are the URNs it
would have had under the parent's matched old URN (with its own name and type, and with
each of its own aliases' names and types), so grandchildren follow through the chain.
"""

from __future__ import annotations

from typing import AbstractSet, Any, Iterable, Mapping, NamedTuple, Optional

ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
_PREFIX = "urn:pulumi:"
_FIELDS = ("urn", "name", "type", "stack", "project", "parentUrn")  # and noParent, the one flag


class Conflict(NamedTuple):
    """An old URN that two resources claim (the engine's duplicate resource alias error)."""

    old: str
    claimant: str
    rival: str  # the resource that took it over first, or has it as its own URN


def _parts(urn: str) -> list[str]:
    # stack, project, qualified type, name; a name may itself contain "::". A malformed
    # URN (from a hand-edited plan) gives empty parts, and so URNs that match nothing.
    return (urn.removeprefix(_PREFIX).split("::", 3) + ["", "", "", ""])[:4]


def qualified_type(urn: str) -> str:
    return _parts(urn)[2]


def urn_type(urn: str) -> str:
    return qualified_type(urn).rsplit("$", 1)[-1]


def urn_name(urn: str) -> str:
    return _parts(urn)[3]


def new_urn(stack: str, project: str, parent_type: Optional[str], type_: str, name: str) -> str:
    """A resource's URN as the engine generates it (NewURN): after its parent's whole type
    chain, where the root stack's type is left out."""
    if parent_type and parent_type != ROOT_STACK_TYPE:
        type_ = f"{parent_type}${type_}"
    return f"{_PREFIX}{stack}::{project}::{type_}::{name}"


def create_urn(name: str, type_: str, parent: Optional[str], project: str, stack: str) -> str:
    """A URN as CreateURN builds it: under a parent, the parent's stack, project and type chain."""
    prefix = parent[: parent.rfind("::")] + "$" if parent else f"{_PREFIX}{stack}::{project}::"
    return f"{prefix}{type_}::{name}"


def collapse(alias: Mapping[str, Any], resource: Mapping[str, Any], matched: Mapping[str, str]) -> str:
    """The old URN one alias names; `matched` maps new URNs to the old URNs they took over."""
    if alias.get("urn"):
        return alias["urn"]
    stack, project = _parts(resource["urn"])[:2]
    parent = alias.get("parentUrn")
    # A named parent that took over an old resource stood under that URN before.
    parent = matched.get(parent, parent) if parent else resource.get("parent")
    if alias.get("noParent") or (parent and qualified_type(parent) == ROOT_STACK_TYPE):
        parent = None
    return create_urn(alias.get("name") or resource["name"], alias.get("type") or resource["type"], parent,
                      alias.get("project") or project, alias.get("stack") or stack)


def inherited_child_alias(child_type: str, child_name: str, parent_name: str, parent_alias: str) -> str:
    """The URN a child had under its parent's old URN; a name built as `{parent}-role` follows the parent's old name."""
    if child_name.startswith(parent_name):
        child_name = urn_name(parent_alias) + child_name[len(parent_name):]
    stack, project, parent_type, _ = _parts(parent_alias)
    return new_urn(stack, project, parent_type, child_type, child_name)


def alias_urns(resource: Mapping[str, Any], matched: Mapping[str, str]) -> list[str]:
    """The old URNs a new resource may have had, in the order the engine tries them:
    its own aliases, then those inherited from the old URN its parent took over (if any)."""
    own = [collapse(a, resource, matched) for a in resource.get("aliases") or ()]
    urns = list(own)
    parent = resource.get("parent")
    if parent and parent in matched:
        parent_name, parent_alias = urn_name(parent), matched[parent]
        urns.append(inherited_child_alias(resource["type"], resource["name"], parent_name, parent_alias))
        urns += [inherited_child_alias(urn_type(u), urn_name(u), parent_name, parent_alias) for u in own]
    return list(dict.fromkeys(urns))


def well_formed(alias: Any) -> bool:
    """Whether a plan's alias record has the shape the engine records."""
    return isinstance(alias, dict) and all(
        isinstance(v, bool) if k == "noParent" else k in _FIELDS and isinstance(v, str) for k, v in alias.items())


def resolve(old_urns: AbstractSet[str], resources: Iterable[Mapping[str, Any]]) -> tuple[dict[str, str], list[Conflict]]:
    """New URN -> the old URN it takes over through an alias, and the engine's conflicts: an old
    URN claimed by two new resources, or claimed while a new resource has it as its own URN.
    A claim in error is left out, so that old resource is deleted and the claimant created."""
    resources = list(resources)
    new_urns = {r["urn"] for r in resources}
    matched: dict[str, str] = {}
    claimed: dict[str, str] = {}  # old URN -> the new URN that took it over
    conflicts: list[Conflict] = []
    # The engine sees a parent before its children; a parent's type chain is shorter.
    for resource in sorted(resources, key=lambda r: (qualified_type(r["urn"]).count("$"), r["urn"])):
        urn = resource["urn"]
        if urn in old_urns:
            continue
        old = next((u for u in alias_urns(resource, matched) if u in old_urns), None)
        if old is None:
            continue
        rival = claimed.get(old) or (old if old in new_urns else None)
        if rival:
            conflicts.append(Conflict(old, urn, rival))
            continue
        matched[urn], claimed[old] = old, urn
    return matched, conflicts
