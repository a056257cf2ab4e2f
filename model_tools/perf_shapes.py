"""The shapes Perf Analyzer sends a tuned model, checked against the model's config.pbtxt.

One rule for the plan (inference_platform.tuning.perf_inputs, for the models a stack uploads)
and for a tuning run's first step (for the models it does not: the run reads the config from
the weight cache before its Triton server starts, and fails at once instead of hours later).

Perf Analyzer takes an input's shape from the model's metadata, which is the config's `dims`
(with a leading -1 when max_batch_size > 0; `reshape` is what the model sees, not the client:
triton core src/tritonserver.cc TRITONSERVER_ServerModelMetadata), drops that batch dimension
(perf_analyzer src/model_parser.cc InitTriton: `skip = (max_batch_size_ > 0)`) and uses a
`--shape` only for an input with a -1 left. The data it generates (random or zero) covers every
input, `optional: true` ones too, and refuses a -1 it was not given a size for and any shape
tensor (src/data_loader.cc GenerateData). So: every input whose dims hold a -1 needs a shape of
as many sizes, each fixed dim as it is; a shape tensor cannot be tuned with generated data.

`python3 -m model_tools.perf_shapes --config <config.pbtxt> --where <text> --model <name>
--key <stack key of the version's tuning> [--shape <name>:<d1>,<d2> ...]`: exit 0 when Perf
Analyzer can profile the model (or there is no config.pbtxt: Triton completes the config from
the model file, which only the server can read), 2 with one line per problem naming the stack
key to set, 4 when the config does not parse.

Standard library, protobuf and tritonclient only: this file ships to the pod in a ConfigMap.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any, Union

KeyPath = tuple[Union[str, int], ...]
# A key part written bare in a stack key path; others are quoted (settings/errors.py format_path).
BARE_KEY = re.compile(r"[A-Za-z0-9_/.-]+")


def shape_problems(config: Any, shapes: dict[str, list[int]], model: str, where: str) -> list[tuple[KeyPath, str]]:
    """Inputs of `config` (Triton's ModelConfig message) Perf Analyzer cannot fill with the given
    `shapes`, and shapes that fit no input (paths relative to the version's `tuning`). A config
    listing no inputs (Triton completes it from the model file) tells nothing."""
    inputs = {i.name: list(i.dims) for i in config.input}
    if not inputs:
        return []
    problems: list[tuple[KeyPath, str]] = []
    for i in config.input:
        if i.is_shape_tensor:
            problems.append(((), f"input {i.name!r} of model {model!r} is a shape tensor ({where}): Perf Analyzer "
                             "cannot generate its data (random or zero); allowed: tuning of models without shape tensors"))
    for name, dims in inputs.items():
        if -1 in dims and name not in shapes:
            example = ", ".join(str(d) if d != -1 else "<n>" for d in dims)
            problems.append((("shapes", name), f"input {name!r} of model {model!r} has variable dims {dims} ({where}) "
                             f"and no shape: Perf Analyzer cannot choose one; allowed: shapes.{name}: [{example}] "
                             "with each <n> a size it should send"))
    for name, shape in shapes.items():
        dims = inputs.get(name)
        if dims is None:
            problems.append((("shapes", name), f"model {model!r} has no input {name!r} ({where}); "
                             f"inputs: {', '.join(sorted(inputs))}"))
        elif len(shape) != len(dims) or any(d not in (-1, s) for d, s in zip(dims, shape, strict=True)):
            problems.append((("shapes", name), f"{shape} does not fit the input's dims {dims} ({where}); allowed: "
                             f"{len(dims)} sizes, equal to each fixed dim"))
    return problems


def key(prefix: str, path: KeyPath) -> str:
    """`prefix` (a version's `tuning` key) extended by `path` as the stack file's errors write it."""
    text = prefix
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if BARE_KEY.fullmatch(part) else f'["{part}"]'
    return text


def parse_shape(text: str) -> tuple[str, list[int]]:
    """`<name>:<d1>,<d2>` as Perf Analyzer's `--shape` takes it (split at the last ':')."""
    name, _, dims = text.rpartition(":")
    try:
        return name, [int(d) for d in dims.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: <name>:<d1>,<d2>,...") from None


def check(config_file: Path, where: str, model: str, prefix: str, shapes: dict[str, list[int]]) -> tuple[int, list[str]]:
    """(exit code, lines) of the check of one model's config file."""
    try:
        text = config_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return 0, [f"no {where}: Triton completes the config from the model file; shapes are not checked before the run"]
    except (OSError, UnicodeDecodeError) as err:
        return 4, [f"{where}: cannot read the model's config: {err}"]
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    try:
        config = text_format.Parse(text, model_config_pb2.ModelConfig())
    except text_format.ParseError as err:
        return 4, [f"{where}: invalid Triton model config: {err}".replace("\n", "\\n")]
    problems = shape_problems(config, shapes, model, where)
    return (2 if problems else 0), [f"{key(prefix, path)}: {why}" for path, why in problems]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, required=True, help="the model's config.pbtxt as the run copied or mounted it")
    p.add_argument("--where", required=True, help="where the config lives, for the messages")
    p.add_argument("--model", required=True)
    p.add_argument("--key", required=True, help="the stack key of the version's tuning")
    p.add_argument("--shape", type=parse_shape, action="append", default=[], help="<name>:<d1>,<d2> (Perf Analyzer's --shape)")
    a = p.parse_args(argv)
    code, lines = check(a.config, a.where, a.model, a.key, dict(a.shape))
    for line in lines:
        print(f"perf_shapes: {line}", file=sys.stderr if code else sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main())
