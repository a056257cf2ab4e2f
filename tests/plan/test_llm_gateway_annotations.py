"""An LLM service's Gateway hands `mesh.gatewayAnnotations` to the LoadBalancer Service istiod
deploys for it (`spec.infrastructure.annotations`), as the classic ingress gateway's Service has
them; the stack and TritonService used alone refuse what that field cannot carry."""

from __future__ import annotations

import copy

import pytest
import yaml

from inference_platform.serving.inputs import TritonServiceInputs
from inference_platform.settings.errors import ConfigError
from platformctl.engine import stack_settings
from platformctl.invariants import plan_resources
from tests.conftest import ROOT, stack_plan

GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
MESH = "inference-platform:mesh"


def test_the_llm_gateway_passes_the_mesh_gateway_annotations_to_what_istiod_deploys():
    annotations = dict(stack_settings("acme-prod").mesh.gateway_annotations)
    assert annotations, "acme-prod keeps its floating IP through mesh.gatewayAnnotations"
    (gateway,) = [r for r in plan_resources(stack_plan("acme-prod")) if r["type"] == GATEWAY]
    infrastructure = gateway["inputs"]["spec"]["infrastructure"]
    assert infrastructure["annotations"] == annotations
    # Beside the overlays istiod reads from the parameters ConfigMap.
    assert infrastructure["parametersRef"]["kind"] == "ConfigMap"


def _acme_with_annotations(tmp_path, annotations: dict[str, str], llm: bool = True):
    doc = yaml.safe_load((ROOT / "stacks" / "Pulumi.acme-prod.yaml").read_text())
    doc["config"][MESH]["gatewayAnnotations"] = annotations
    if not llm:
        doc["config"]["inference-platform:services"] = [
            s for s in doc["config"]["inference-platform:services"] if s["name"] != "llm-chat"]
    stack_file = tmp_path / "Pulumi.acme-prod.yaml"
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    return stack_file


NINE = {f"example.com/a{i}": "x" for i in range(9)}


def test_more_annotations_than_a_gateway_takes_are_refused_only_beside_an_llm_service(tmp_path):
    with pytest.raises(ConfigError) as info:
        stack_settings(_acme_with_annotations(tmp_path, NINE))
    assert info.value.paths == ["inference-platform:mesh.gatewayAnnotations"], info.value.one_line()
    assert "9 annotations, but an LLM service's Gateway passes them to its LoadBalancer Service as " \
           "spec.infrastructure.annotations, which takes at most 8; allowed: at most 8" in info.value.one_line()
    assert len(stack_settings(_acme_with_annotations(tmp_path, NINE, llm=False)).mesh.gateway_annotations) == 9


def test_an_annotation_istiod_would_leave_off_is_refused(tmp_path):
    with pytest.raises(ConfigError) as info:
        stack_settings(_acme_with_annotations(tmp_path, {"gateway.networking.k8s.io/x": "y"}))
    assert info.value.paths == ["inference-platform:mesh.gatewayAnnotations.gateway.networking.k8s.io/x"], info.value.one_line()


def test_triton_service_used_alone_refuses_more_annotations_than_its_gateway_takes():
    settings = stack_settings("acme-prod")
    chat = settings.services[0]
    problems = TritonServiceInputs(service=chat, gpu_groups=settings.gpu_groups, gateway_annotations=NINE).problems()
    assert [p for p, _ in problems if p == ("gateway_annotations",)] == [("gateway_annotations",)], problems
    classic = settings.services[1]
    assert not classic.llm_routed
    assert not [p for p in TritonServiceInputs(service=classic, gpu_groups=settings.gpu_groups,
                                               gateway_annotations=copy.deepcopy(NINE)).problems()
                if p[0] == ("gateway_annotations",)]
