"""No object is owned twice once Helm has installed the releases: every release of every example
stack rendered by the real chart (`helm template`), each object's (group, kind, namespace, name)
made by one release or one Pulumi resource only (platformctl/objects.py release_object_clashes)."""

from __future__ import annotations

import pytest

from platformctl.objects import release_object_clashes
from platformctl.uninstall import uninstalls_that_never_end
from tests.conftest import STACKS, stack_plan
from tests.support import helm


@pytest.mark.parametrize("stack", STACKS)
def test_no_two_releases_nor_a_release_and_a_resource_make_the_same_object(stack, reference):
    plan = stack_plan(stack)
    assert release_object_clashes(plan, helm.installed_by_release(plan)) == []


def test_two_releases_rendering_one_object_are_named():
    from platformctl.plan_model import Plan

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}}
    assert release_object_clashes(Plan("s", [], {}), {"ns/a": [secret], "ns/b": [secret]}) == [
        "Secret ns/s is rendered by Helm release ns/a and Helm release ns/b"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_can_be_uninstalled_without_its_objects_coming_back(stack, reference):
    plan = stack_plan(stack)
    assert uninstalls_that_never_end(plan, helm.installed_by_release(plan)) == []


def test_an_aggregated_role_beside_the_roles_it_gathers_is_named_until_patched():
    from platformctl.plan_model import Plan, Resource

    gathered = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "editor", "labels": {"team/admin": "true"}}}
    aggregated = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "admin"},
                  "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"team/admin": "true"}}]}}
    rendered = {"ns/chart": [gathered, aggregated]}

    def patch(retained: bool) -> Resource:
        return Resource("urn:patch", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRolePatch", "admin-aggregation",
                        None, True, None, [], False, retained, False, [],
                        {"metadata": {"name": "admin"}, "aggregationRule": {
                            "clusterRoleSelectors": [{"matchLabels": {"nobody": "true"}}]}})

    [line] = uninstalls_that_never_end(Plan("s", [], {}), rendered)
    assert line.startswith("ClusterRole admin of Helm release ns/chart aggregates roles that go with it")
    assert uninstalls_that_never_end(Plan("s", [patch(retained=True)], {}), rendered) == []
    [line] = uninstalls_that_never_end(Plan("s", [patch(retained=False)], {}), rendered)
    assert "is deleted before the release" in line
