"""Triton model configs the platform writes, checked with Triton's own protobuf.

Every `config.pbtxt` the platform writes or mounts is parsed into Triton's
`inference.ModelConfig` message (model_config.proto, as the pinned tritonclient ships it
in `tritonclient/grpc/model_config_pb2.py`) with protobuf's text format, the parser
tritonserver itself reads the file with: a config Triton could not read fails the plan,
not the pod. No Pulumi resources here.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from google.protobuf import text_format
from google.protobuf.message import Message

from inference_platform.settings.graphs import Graph

CONFIG_FILE = "config.pbtxt"


def tritonclient_dir() -> Path:
    """Where the installed tritonclient package lives, found without importing it (its
    `__init__` modules pull in grpc or gevent)."""
    package = importlib.util.find_spec("tritonclient")
    if package is None or not package.submodule_search_locations:
        raise ImportError("tritonclient is not installed (pyproject.toml pins it)")
    return Path(package.submodule_search_locations[0])


def _load_model_config_pb2() -> ModuleType:
    """tritonclient's model_config_pb2 alone. Importing it as `tritonclient.grpc.model_config_pb2`
    would run `tritonclient/grpc/__init__.py` first, which loads grpc, the service stubs and
    numpy; the generated module itself needs only protobuf."""
    name = "tritonclient.grpc.model_config_pb2"
    if name in sys.modules:
        return sys.modules[name]
    path = tritonclient_dir() / "grpc" / "model_config_pb2.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"tritonclient has no {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered under its own name, so a later regular import reuses it instead of adding
    # model_config.proto to protobuf's descriptor pool a second time.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


model_config_pb2 = _load_model_config_pb2()


class ModelConfigError(ValueError):
    """A config.pbtxt that Triton's ModelConfig protobuf refuses, on one line."""

    def __init__(self, where: str, reason: str):
        self.where = where
        # protobuf's message: `<line>:<column> : <what>`, sometimes quoting the line.
        self.reason = reason.replace("\n", "\\n")
        super().__init__(f"{where}: invalid Triton model config: {self.reason}")


def parse_model_config(text: str, where: str) -> Message:
    """`text` as Triton's ModelConfig message; `where` (a path or a model) names it in the error."""
    try:
        return text_format.Parse(text, model_config_pb2.ModelConfig())
    except text_format.ParseError as err:
        raise ModelConfigError(where, str(err)) from None


def _tensors(field, tensors) -> None:
    for t in tensors:
        field.add(name=t.name, data_type=model_config_pb2.DataType.Value(t.data_type), dims=t.dims)


def ensemble_config(graph: Graph) -> str:
    """The config.pbtxt of the Triton ensemble that runs a `placement: ensemble` graph: its
    inputs and outputs, and one ensemble step per graph step, in order, each calling the
    latest version of the step's model with the step's tensor maps."""
    config = model_config_pb2.ModelConfig(
        name=graph.name,
        platform="ensemble",
        # 0: the ensemble adds no batch dimension, so the graph's tensors have exactly the dims
        # declared. Whether a step's model batches is in that model's own config, which the
        # platform does not read; Triton accepts a tensor whose dims lead with -1 where a
        # batching step takes it without one (ensemble_utils.cc ValidateTensorConsistency
        # compares the full shapes). A value above 0 would be refused wherever a batching step
        # allows less. Proto3 leaves a 0 out of the text; Triton reads it as 0.
        max_batch_size=0,
    )
    _tensors(config.input, graph.inputs)
    _tensors(config.output, graph.outputs)
    for step in graph.steps:
        # Keys are the step model's tensor names, values the ensemble's. Tensors passed between
        # steps need no declaration: the names the scheduler knows are the ensemble's inputs and
        # outputs "and all values in the input_map and the output_map" (Triton server
        # docs/user_guide/ensemble_models.md).
        config.ensemble_scheduling.step.add(
            model_name=step.model,
            model_version=-1,  # the latest version the step's model has loaded
            input_map=step.inputs,
            output_map=step.outputs,
        )
    text = text_format.MessageToString(config)
    # Read back as tritonserver will: what is written is what Triton parses.
    parse_model_config(text, f"ensemble config of graph {graph.name!r}")
    return text


def broken_repository_configs(source: str) -> list[str]:
    """One message per config.pbtxt under a model-repository directory that Triton's model
    config refuses (or that cannot be read as UTF-8 text), in path order."""
    root = Path(source)
    found = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories.sort()
        if CONFIG_FILE in files:
            path = Path(directory) / CONFIG_FILE
            where = path.relative_to(root).as_posix()
            try:
                parse_model_config(path.read_text(encoding="utf-8"), where)
            except ModelConfigError as err:
                found.append(str(err))
            except (OSError, UnicodeDecodeError) as err:
                found.append(f"{where}: cannot be read as text: {err}")
    return found
