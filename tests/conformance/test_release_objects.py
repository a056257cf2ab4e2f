"""No object is owned twice once Helm has installed the releases: every release of every example
stack rendered by the real chart (`helm template`), each object's (group, kind, namespace, name)
made by one release or one Pulumi resource only (platformctl/objects.py release_object_clashes)."""

from __future__ import annotations

import pytest

from inference_platform.core import controller_names
from platformctl.objects import admitted_identity_problems, document_key, release_object_clashes, router_releases
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


@pytest.mark.parametrize("stack", STACKS)
def test_the_model_of_each_router_release_is_what_helm_installs(stack, reference):
    # The plan tier knows these objects only from the model (core/controller_names.py).
    plan = stack_plan(stack)
    installed = helm.installed_by_release(plan)
    for namespace, release in router_releases(plan):
        assert sorted(controller_names.router_release_objects(namespace, release)) == sorted(
            document_key(doc) for doc in installed[f"{namespace}/{release}"])


def test_an_object_a_controller_makes_beside_a_rendered_one_is_named():
    from platformctl.plan_model import Plan

    pool = {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool", "metadata": {"name": "p", "namespace": "ns"}}
    shadow = {"apiVersion": "v1", "kind": "Service",
              "metadata": {"name": controller_names.inference_pool_service_name("p"), "namespace": "ns"}}
    assert release_object_clashes(Plan("s", [], {}), {"ns/a": [pool, shadow]}) == [
        f"Service ns/{shadow['metadata']['name']} is rendered by Helm release ns/a and istiod for InferencePool ns/p"]
    assert release_object_clashes(Plan("s", [], {}), {"ns/a": [pool]}) == []


@pytest.mark.parametrize("stack", STACKS)
def test_every_identity_a_policy_admits_belongs_to_the_workloads_of_one_maker(stack, reference):
    plan = stack_plan(stack)
    assert admitted_identity_problems(plan, helm.installed_by_release(plan)) == []


def test_a_workload_running_under_the_gateways_identity_is_named(reference):
    # What a service named `llm-chat-istio` in `llm-chat` would do: its pods under istiod's gateway ServiceAccount.
    import dataclasses

    plan = stack_plan("acme-prod")
    embed = next(r for r in plan.resources if r.type.endswith(":Deployment") and r.inputs["metadata"].get("name") == "embed-v1")
    template = embed.inputs["spec"]["template"]
    stranger = dataclasses.replace(embed, urn=embed.urn + "-stranger", inputs={**embed.inputs, "metadata": {
        **embed.inputs["metadata"], "name": "stranger", "namespace": "llm-chat"}, "spec": {**embed.inputs["spec"], "template": {
            **template, "spec": {**template["spec"], "serviceAccountName": "llm-chat-istio"}}}})
    with_stranger = dataclasses.replace(plan, resources=[*plan.resources, stranger])
    assert admitted_identity_problems(with_stranger, helm.installed_by_release(plan)) == [
        "ServiceAccount llm-chat/llm-chat-istio, admitted by AuthorizationPolicy.security.istio.io llm-chat/llm-chat, made "
        "by istiod for Gateway llm-chat/llm-chat, is also the identity of workloads of the stack's resources"]
