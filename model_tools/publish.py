"""Publish what Model Analyzer found: the best config variants of one model, renamed so
Triton's `--model-config-name` finds them, and the run's reports.

Runs inside the Triton SDK image (Python 3, protobuf, tritonclient), after `model-analyzer
profile` in remote mode has written:
- `<results>/results/metrics-model-inference.csv`: one row per measurement, the variants in
  Model Analyzer's own order, best first (result_table_manager.tabulate_results walks
  `get_model_sorted_results`), with "Satisfies Constraints" Yes or No;
- `<variants>/<variant>/config.pbtxt`: each variant's config (metrics_manager
  `_create_remote_mode_model_variant`), named after the variant.

It writes, under `--dest` (the model's directory in the weight cache, or a staging copy of
it that is uploaded next):
- `configs/<tag>-<rank>.pbtxt` for the best `--keep` variants that met the constraints, each
  parsed with Triton's ModelConfig protobuf and named after the model, as Triton requires of
  a config it loads for the model's directory;
- `tuning/<tag>/`: the run's results and reports.
Nothing is written when no variant met the constraints (exit 3), nor when a config does
not parse (exit 4). With `--patch`, the stack-file patch that adds a version serving the
best variant is written too.

Standard library, protobuf and tritonclient only: this file ships to the pod in a ConfigMap.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

INFERENCE_CSV = Path("results") / "metrics-model-inference.csv"
CONFIG_FILE = "config.pbtxt"
# Column headers of Model Analyzer's inference table (result_table_manager.headers).
MODEL_COLUMN = "Model"
VARIANT_COLUMN = "Model Config Path"
SATISFIES_COLUMN = "Satisfies Constraints"


class PublishError(Exception):
    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def ranked_variants(csv_text: str, model: str) -> list[str]:
    """The model's variants that met every constraint, best first, each once."""
    rows = csv.DictReader(csv_text.splitlines())
    missing = {MODEL_COLUMN, VARIANT_COLUMN, SATISFIES_COLUMN} - set(rows.fieldnames or ())
    if missing:
        raise PublishError(f"{INFERENCE_CSV}: no column {', '.join(sorted(missing))}; columns: {rows.fieldnames}", 4)
    ranked: list[str] = []
    for row in rows:
        variant = Path(row[VARIANT_COLUMN].strip()).name
        if row[MODEL_COLUMN].strip() == model and row[SATISFIES_COLUMN].strip() == "Yes" and variant not in ranked:
            ranked.append(variant)
    return ranked


def _model_config_pb2():
    from tritonclient.grpc import model_config_pb2

    return model_config_pb2


def published_config(text: str, model: str, where: str) -> str:
    """A variant's config as the model's: parsed with Triton's ModelConfig, `name` set to the
    model, written out and parsed back."""
    from google.protobuf import text_format

    pb2 = _model_config_pb2()
    try:
        config = text_format.Parse(text, pb2.ModelConfig())
    except text_format.ParseError as err:
        raise PublishError(f"{where}: invalid Triton model config: {err}", 4) from None
    config.name = model
    out = text_format.MessageToString(config)
    text_format.Parse(out, pb2.ModelConfig())
    return out


def publish(variants: Path, results: Path, model: str, tag: str, keep: int, dest: Path) -> list[str]:
    """Write the best variants and the reports under `dest`; the config names written, best first."""
    csv_path = results / INFERENCE_CSV
    try:
        ranked = ranked_variants(csv_path.read_text(encoding="utf-8"), model)
    except OSError as err:
        raise PublishError(f"{csv_path}: cannot read Model Analyzer's results: {err}", 4) from None
    if not ranked:
        raise PublishError(f"no configuration of model {model!r} met the constraints; see {csv_path}", 3)
    # Everything is parsed before anything is written.
    configs = {}
    for rank, variant in enumerate(ranked[:keep], start=1):
        path = variants / variant / CONFIG_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            raise PublishError(f"{path}: cannot read the variant's config: {err}", 4) from None
        configs[f"{tag}-{rank}"] = published_config(text, model, str(path))
    for name, text in configs.items():
        _write_atomically(dest / "configs" / f"{name}.pbtxt", text)
    reports = dest / "tuning" / tag
    shutil.copytree(results, reports, dirs_exist_ok=True)
    return list(configs)


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def stack_patch(service: str, base_version: str, version: str, cache: str, path: str, config_name: str,
                weight: int, provenance: dict | None = None) -> dict:
    """The stack-file patch that adds `version` as a canary of `service` (platformctl patch applies it),
    recording where it came from (`provenance`: workflow, onnx, onnxSha256)."""
    add = {"from": base_version, "name": version, "weight": weight,
           "modelRepository": {"cache": cache, "path": path}, "modelConfigName": config_name}
    if provenance:
        add["provenance"] = provenance
    return {"kind": "StackPatch", "service": service, "addVersion": add}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--variants", type=Path, required=True, help="Model Analyzer's output model repository")
    p.add_argument("--results", type=Path, required=True, help="Model Analyzer's export path")
    p.add_argument("--tag", required=True, help="config name prefix of this run (tuned-<id>)")
    p.add_argument("--keep", type=int, required=True)
    p.add_argument("--dest", type=Path, required=True, help="the model's directory to publish into")
    patch = p.add_argument_group("stack-file patch for a new canary version")
    patch.add_argument("--patch", type=Path)
    for flag in ("--service", "--base-version", "--version", "--cache", "--path"):
        patch.add_argument(flag)
    patch.add_argument("--weight", type=int)
    patch.add_argument("--workflow", help="the Argo workflow's name")
    patch.add_argument("--onnx", help="the ONNX file's path in the weight cache")
    patch.add_argument("--onnx-file", type=Path, help="the ONNX file as the workflow copied it")
    a = p.parse_args(argv)
    try:
        names = publish(a.variants, a.results, a.model, a.tag, a.keep, a.dest)
    except PublishError as err:
        print(f"publish: {err}", file=sys.stderr)
        return err.code
    print(f"published {', '.join(names)} under {a.dest / 'configs'}")
    if a.patch:
        provenance = ({"workflow": a.workflow, "onnx": a.onnx, "onnxSha256": sha256_of(a.onnx_file)}
                      if a.workflow and a.onnx and a.onnx_file else None)
        body = stack_patch(a.service, a.base_version, a.version, a.cache, a.path, names[0], a.weight, provenance)
        _write_atomically(a.patch, json.dumps(body, indent=2) + "\n")
        print(json.dumps(body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
