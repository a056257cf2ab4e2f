"""The autoscaler Magnum's Heat driver deploys for the default group: a release that knows node
groups and reads the PodDisruptionBudgets Kubernetes 1.34 serves, or the plan is refused at
`cluster.magnum.template.labels.autoscaler_tag` with the fix."""

from __future__ import annotations

import pytest

from inference_platform.cluster.inputs import ClusterInputs
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import parse_settings
from tests.conftest import HEAT_MIRRORED_AUTOSCALER, as_magnum, base_config, on_heat

STACK_FILE = "stacks/Pulumi.test-dev.yaml"
PATH = "inference-platform:cluster.magnum.template.labels.autoscaler_tag"


def heat(labels: dict[str, str], groups: int = 2, **magnum) -> dict:
    raw = on_heat(as_magnum(base_config()), **magnum)
    raw["cluster"]["magnum"]["template"]["labels"] = labels
    raw["cluster"]["nodeGroups"] = raw["cluster"]["nodeGroups"][:groups]
    raw["cluster"]["nodeGroups"][-1]["flavor"] = "g1"
    if groups == 1:
        raw["services"] = []  # they run on the GPU group
    raw["weightCaches"] = {"fileShare": {"mode": "manila", "sizeGb": 100}}
    return raw


def refusal(raw: dict) -> str:
    with pytest.raises(ConfigError) as info:
        parse_settings(raw, STACK_FILE, frozenset())
    assert PATH in info.value.paths, info.value.one_line()
    return info.value.one_line()


def test_magnums_default_autoscaler_beside_node_groups_is_refused_with_the_fix():
    line = refusal(heat({}))
    for words in ("Magnum's default cluster-autoscaler v1.18.1", "knows no node groups",
                  "resizes that group from the whole cluster's node count", "allowed: a tag of v1.25 or later",
                  "best v1.34.x", "container_infra_prefix", "registry.k8s.io/autoscaling/cluster-autoscaler:v1.34.5"):
        assert words in line, line
    assert "\n" not in line


def test_a_release_that_knows_node_groups_but_lists_pdbs_as_v1beta1_is_refused():
    # v1.23.0: the autoscaler_tag of Magnum's tested Antelope labels (doc/source/user/index.rst).
    line = refusal(heat({"autoscaler_tag": "v1.23.0"}))
    assert "cluster-autoscaler v1.23.0, which lists PodDisruptionBudgets through policy/v1beta1" in line
    assert "Magnum's default" not in line


def test_a_tag_that_is_not_a_release_is_refused():
    assert "'latest' is not a cluster-autoscaler release" in refusal(heat({"autoscaler_tag": "latest"}))


def test_a_single_autoscaled_default_group_still_needs_a_release_that_sees_its_pdbs():
    assert "policy/v1beta1" in refusal(heat({}, groups=1))


@pytest.mark.parametrize("case,raw", [
    ("a release of the cluster's minor", heat(dict(HEAT_MIRRORED_AUTOSCALER))),
    ("the first release with policy/v1", heat({"autoscaler_tag": "v1.25.0"})),
    # Magnum's autoscaler has nothing to size: one group, fixed.
    ("a fixed default group alone", (lambda raw: raw["cluster"]["nodeGroups"][0].update(minNodes=2, maxNodes=2) or raw)(heat({}, groups=1))),
    # The template's labels are the operator's: the platform cannot see them.
    ("an existing template", heat({}, templateId="9f1c2d3e-0000-4000-8000-000000000001")),
])
def test_accepted(case, raw):
    parse_settings(raw, STACK_FILE, frozenset())


def test_the_cluster_component_used_alone_refuses_it_too():
    settings = parse_settings(heat(dict(HEAT_MIRRORED_AUTOSCALER)), STACK_FILE, frozenset())
    magnum = settings.cluster.magnum
    template = magnum.template.model_copy(update={"labels": {}})
    cluster = settings.cluster.model_copy(update={"magnum": magnum.model_copy(update={"template": template})})
    problems = ClusterInputs(cluster=cluster).problems()
    assert any(path == ("cluster", "magnum", "template", "labels", "autoscaler_tag") and "knows no node groups" in text
               for path, text in problems), problems
