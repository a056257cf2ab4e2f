"""No object is owned twice once Helm has installed the releases: every release of every example
stack rendered by the real chart (`helm template`), each object's (group, kind, namespace, name)
made by one release or one Pulumi resource only (platformctl/objects.py release_object_clashes)."""

from __future__ import annotations

import pytest

from platformctl.objects import release_object_clashes
from tests.conftest import STACKS, stack_plan
from tests.support import helm


@pytest.mark.parametrize("stack", STACKS)
def test_no_two_releases_nor_a_release_and_a_resource_make_the_same_object(stack, reference):
    plan = stack_plan(stack)
    rendered = {f"{r['namespace']}/{r['name']}": helm.installed(r) for r in helm.releases(plan)}
    assert release_object_clashes(plan, rendered) == []


def test_two_releases_rendering_one_object_are_named():
    from platformctl.plan_model import Plan

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}}
    assert release_object_clashes(Plan("s", [], {}), {"ns/a": [secret], "ns/b": [secret]}) == [
        "Secret ns/s is rendered by Helm release ns/a and Helm release ns/b"]
