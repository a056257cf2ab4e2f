"""The ledger of renames, by the release that made them: what an existing stack's state still
names, and how the engine finds it again. Add an entry whenever a type token, a child's logical
name or a pickled module path changes; never drop one while stacks may hold the old name.

- Type tokens: a component registers an alias to each of its old tokens (`component_aliases`),
  and its children inherit it, so nothing is replaced (platformctl diff resolves aliases as the
  engine does and reports such resources as renamed).
- Pickled providers: a dynamic resource's state holds its provider pickled by reference to a
  module path, and the engine loads it from the old state to refresh and delete; an old path must
  stay importable (from the project directory, where the provider process runs).
"""

from __future__ import annotations

from typing import NamedTuple

import pulumi


class Release(NamedTuple):
    type_tokens: dict[str, str]
    """Component -> the type token it had before this release."""
    pickled_modules: dict[str, str]
    """Module path states may hold for a dynamic provider -> the file that keeps it importable."""


RELEASES: dict[str, Release] = {
    # Components published through the plugin: tokens `inference-platform:index:<Type>`.
    "0.1.0": Release(
        type_tokens={
            "InferencePlatform": "inference-platform:platform:InferencePlatform",
            "Cluster": "inference-platform:cluster:Cluster",
            "GpuOperator": "inference-platform:gpu:GpuOperator",
            "ColdStart": "inference-platform:coldstart:ColdStart",
            "Mesh": "inference-platform:mesh:Mesh",
            "Observability": "inference-platform:observability:Observability",
            "InferenceNamespaces": "inference-platform:namespaces:InferenceNamespaces",
            "WeightCaches": "inference-platform:weights:WeightCaches",
            "TritonService": "inference-platform:triton:TritonService",
            "InferenceGraph": "inference-platform:graphs:InferenceGraph",
            "ModelPipeline": "inference-platform:pipeline:ModelPipeline",
        },
        pickled_modules={},
    ),
    # The package `inference_platform` in subpackages: type tokens and logical names unchanged.
    "0.2.0": Release(type_tokens={}, pickled_modules={"components.s3bucket": "components/s3bucket.py"}),
}


def legacy_types(type_name: str) -> list[str]:
    """Every type token the component had before, oldest first."""
    return [r.type_tokens[type_name] for r in RELEASES.values() if type_name in r.type_tokens]


def component_aliases(type_name: str) -> list[pulumi.Alias]:
    return [pulumi.Alias(type_=token) for token in legacy_types(type_name)]
