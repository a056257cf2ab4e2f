"""The components the package publishes: what `pulumi package add` offers other languages.

plugin.py hosts them with the SDK's `component_provider_host`; the schema (every
component, its arguments and outputs) is inferred from their type annotations and
docstrings, so this list is also what tests/test_component_schema.py checks.
"""

from .cluster import Cluster
from .coldstart import ColdStart
from .common import PART_OF
from .gpu import GpuOperator
from .graphs import InferenceGraph
from .mesh import Mesh
from .namespaces import InferenceNamespaces
from .observability import Observability
from .pipeline import ModelPipeline
from .platform import InferencePlatform
from .triton import TritonService
from .weights import WeightCaches

PACKAGE = PART_OF
VERSION = "0.1.0"
COMPONENTS = [
    InferencePlatform, Cluster, GpuOperator, ColdStart, Mesh, Observability, InferenceNamespaces, WeightCaches,
    TritonService, InferenceGraph, ModelPipeline,
]
