"""What keeps a Helm uninstall from ending.

pulumi-kubernetes waits for every object of a release to be gone when it uninstalls one
(provider/pkg/provider/helm_release.go Delete: Wait unless skipAwait), so an object that something
re-creates while the release goes fails `pulumi destroy` after the release's timeout. One such
object is known: an aggregated ClusterRole whose selector matches roles that go at the same time
(components/core/common.py aggregation_stopped says why the controller re-creates it). Each one must have
its selector patched to match nothing, by a patch kept on delete.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .plan_model import Plan, Resource

CLUSTER_ROLE_PATCH = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRolePatch"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"


def _matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    # aggregationRule selectors are LabelSelectors; the charts use matchLabels only, and an
    # expression is taken to match (the check then asks for the patch rather than miss a role).
    if selector.get("matchExpressions"):
        return True
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def _role_labels(plan: Plan, rendered: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, str]]:
    """The labels of every ClusterRole that goes when the stack is destroyed."""
    roles = [doc for docs in rendered.values() for doc in docs if doc.get("kind") == "ClusterRole"]
    labels = [dict((doc.get("metadata") or {}).get("labels") or {}) for doc in roles]
    return labels + [dict((r.inputs.get("metadata") or {}).get("labels") or {}) for r in plan.of_type(CLUSTER_ROLE)]


def _patches(plan: Plan) -> dict[str, Resource]:
    return {str((r.inputs.get("metadata") or {}).get("name")): r for r in plan.of_type(CLUSTER_ROLE_PATCH)}


def uninstalls_that_never_end(plan: Plan, rendered: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """One line per aggregated ClusterRole of a release that the uninstall would re-create.
    `rendered`: release name -> the objects it installs (as release_object_clashes takes them)."""
    labels = _role_labels(plan, rendered)
    patches = _patches(plan)
    problems = []
    for release, docs in rendered.items():
        for doc in docs:
            if doc.get("kind") != "ClusterRole" or not doc.get("aggregationRule"):
                continue
            name = doc["metadata"]["name"]
            patch = patches.get(name)
            rule = (patch.inputs.get("aggregationRule") if patch else None) or doc["aggregationRule"]
            selected = any(_matches(sel, role) for sel in rule.get("clusterRoleSelectors") or () for role in labels)
            if selected:
                problems.append(f"ClusterRole {name} of Helm release {release} aggregates roles that go with it: the "
                                f"clusterrole-aggregation controller re-creates it during the uninstall, which then "
                                f"never ends (core/common.aggregation_stopped)")
            elif patch is not None and not patch.retain_on_delete:
                problems.append(f"ClusterRole {name} of Helm release {release}: its aggregation patch {patch.name} "
                                f"is deleted before the release, handing the chart's selector back")
    return problems
