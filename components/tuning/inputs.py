"""What ModelPipeline takes: the services with a pipeline and the names it consumes."""

from __future__ import annotations

from typing import Optional

from inference_platform.core.input_types import NameInput
from inference_platform.settings.base import DnsLabel, Labels, Model
from inference_platform.settings.cluster import NodeGroup
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.serving import Service, pipeline_problems
from inference_platform.settings.tuning import PipelineSubmitter
from inference_platform.weights.inputs import WeightsRef, missing_weights


class ModelPipelineInputs(Model):
    """Argo Workflows (controller only) and, per service with `pipeline`, a WorkflowTemplate that builds a TensorRT engine, tunes it with Model Analyzer, publishes it as a new version in the weight cache and ends in a stack-file patch for it as a canary."""

    services: list[Service] = []
    """Services with `pipeline`: each gets, in its namespace, the workflows' ServiceAccount and Role and its WorkflowTemplate."""
    gpu_groups: list[NodeGroup] = []
    """The GPU node groups of the pipelines' base versions (the engine is built and measured there)."""
    weights: dict[DnsLabel, WeightsRef] = {}
    """Per service namespace, its weight caches: the ONNX model is read from, and the new version written to, the base version's cache."""
    priority_class: Optional[NameInput] = None
    """PriorityClass of the GPU steps (the platform's `gpu-tuning`: below serving, preempting nothing); without one they have the default priority."""
    submitters: list[PipelineSubmitter] = []
    """Subjects bound to each pipeline's submit Role (`<service>-pipeline-submit`: run the service's template, follow its workflows)."""
    system_node_selector: Labels = {}
    """Node labels the Argo Workflows controller's pods select, so that they stay off GPU nodes: the platform's system group (on Magnum the cluster's first, CPU group). Empty: any node that admits them."""

    def problems(self) -> list[tuple[KeyPath, str]]:
        """Each service has a pipeline whose base version exists, runs a tritonserver image of a known release, on a given GPU group, reading a cache that `weights` names."""
        found: list[tuple[KeyPath, str]] = []
        groups = {g.name for g in self.gpu_groups}
        for si, svc in enumerate(self.services):
            at: KeyPath = ("services", si)
            if svc.pipeline is None:
                found.append((at + ("pipeline",), "required: only services with a pipeline run here"))
                continue
            own = pipeline_problems(svc)
            found += [(at + path, why) for path, why in own]
            if own:
                continue
            base = next(v for v in svc.versions if v.name == svc.pipeline.base_version)
            if base.gpu.group not in groups:
                found.append((at + ("pipeline", "baseVersion"), f"its GPU group {base.gpu.group!r} is not among gpu_groups"))
            weights = self.weights.get(svc.k8s_namespace)
            if weights is None:
                found.append((("weights", svc.k8s_namespace), f"required: the weight caches of namespace {svc.k8s_namespace!r}"))
            else:
                found += missing_weights(weights, [(at + ("versions", svc.versions.index(base)), base.model_repository)])
        return found
