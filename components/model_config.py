"""Triton model configs the platform writes: built as Triton's own model-config protobuf
(`inference.ModelConfig`, model_config.proto, which the `tritonclient` package ships
compiled) and parsed back with protobuf's text format before anything is applied, so a
broken config fails the plan rather than the pod.
"""

from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from .config import Graph

ModelConfig = model_config_pb2.ModelConfig


class ModelConfigError(ValueError):
    """A config.pbtxt that Triton's model-config protobuf refuses, with where it came from."""


def parse_model_config(text: str, where: str) -> ModelConfig:
    """`text` as Triton reads a config.pbtxt, or ModelConfigError naming `where` and
    protobuf's own message (line:column)."""
    try:
        return text_format.Parse(text, ModelConfig())
    except text_format.ParseError as err:
        raise ModelConfigError(f"{where}: not a Triton model config: {err}") from None


def ensemble_config(graph: Graph) -> str:
    """config.pbtxt of the ensemble model that chains a graph's steps in Triton.

    `max_batch_size: 0`: the tensors have exactly the declared dims, with no batch dimension
    added, whatever batching each step's own model does. Tensors that only pass between
    steps need no declaration: an ensemble declares its own inputs and outputs, and each
    step's `input_map`/`output_map` names the ensemble tensors its model reads and writes
    (Triton's ensemble docs, docs/user_guide/ensemble_models.md).
    """
    config = ModelConfig(name=graph.name, platform="ensemble", max_batch_size=0)
    for tensor in graph.inputs:
        config.input.add(name=tensor.name, data_type=tensor.data_type, dims=tensor.dims)
    for tensor in graph.outputs:
        config.output.add(name=tensor.name, data_type=tensor.data_type, dims=tensor.dims)
    for step in graph.steps:
        # -1: the latest version the step's model repository holds.
        config.ensemble_scheduling.step.add(model_name=step.model, model_version=-1,
                                            input_map=step.inputs, output_map=step.outputs)
    text = text_format.MessageToString(config)
    parse_model_config(text, f"the ensemble of graph {graph.name!r}")
    return text
