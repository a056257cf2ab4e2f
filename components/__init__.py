"""inference_platform: Pulumi components of a GPU inference platform on Kubernetes.

This file is the one registry of the published components: `plugin.py` hosts them (what
`pulumi package add` offers other languages) and `platformctl docs` generates each one's
argument types from the model named here. Modules are imported on demand, so importing a
pure module of the package (a grammar, the settings) never loads the resource-building ones.
"""

from __future__ import annotations

from importlib import import_module
from typing import NamedTuple

PACKAGE = "inference-platform"
VERSION = "0.1.0"


class Registered(NamedTuple):
    module: str
    """Where the component class lives, relative to this package."""
    arguments: str
    """`module:Model` whose fields are the component's arguments (args.py is generated from it)."""


COMPONENTS: dict[str, Registered] = {
    "InferencePlatform": Registered("platform", "settings.stack:Settings"),
    "Cluster": Registered("cluster.cluster", "cluster.inputs:ClusterInputs"),
    "GpuOperator": Registered("gpu.operator", "gpu.inputs:GpuOperatorInputs"),
    "ColdStart": Registered("gpu.coldstart", "gpu.inputs:ColdStartInputs"),
    "Mesh": Registered("mesh.mesh", "mesh.inputs:MeshInputs"),
    "Observability": Registered("observability.observability", "observability.inputs:ObservabilityInputs"),
    "InferenceNamespaces": Registered("serving.namespaces", "serving.inputs:InferenceNamespacesInputs"),
    "WeightCaches": Registered("weights.caches", "weights.inputs:WeightCachesInputs"),
    "TritonService": Registered("serving.triton", "serving.inputs:TritonServiceInputs"),
    "InferenceGraph": Registered("serving.graphs", "serving.inputs:InferenceGraphInputs"),
    "ModelPipeline": Registered("tuning.pipeline", "tuning.inputs:ModelPipelineInputs"),
    "Training": Registered("training.training", "training.inputs:TrainingInputs"),
}


def _load(dotted: str, name: str):
    return getattr(import_module(f"{__name__}.{dotted}"), name)


def component_classes() -> list[type]:
    """The component classes, in registry order."""
    return [_load(r.module, name) for name, r in COMPONENTS.items()]


def argument_models() -> dict[str, type]:
    """Component name -> the pydantic model its arguments come from."""
    return {name: _load(*r.arguments.split(":")) for name, r in COMPONENTS.items()}


def __getattr__(name: str):
    """`from inference_platform import TritonService`: a registered component, loaded on first use."""
    if name in COMPONENTS:
        return _load(COMPONENTS[name].module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
