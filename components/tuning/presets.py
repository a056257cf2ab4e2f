"""Tuning presets rendered into Triton config variants of a model repository.

A preset (config.py `BatchingPreset`) is applied to a model's own config.pbtxt inside
Triton's ModelConfig message: dynamic batching, one instance group, and max_batch_size
when the preset sets one. The result is written as `<model>/configs/<preset>.pbtxt`, the
file Triton loads instead of config.pbtxt when started with `--model-config-name <preset>`
(and it falls back to config.pbtxt where a model has no such file). What Triton would
refuse or silently change is refused here, on one line. No Pulumi resources here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from google.protobuf import text_format

from inference_platform.serving.model_config import CONFIG_FILE, broken_repository_configs, model_config_pb2, parse_model_config
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.tuning import BUILTIN_PRESETS, BatchingPreset, unknown_preset_problems
from inference_platform.settings.weights import S3Cache

CONFIGS_DIR = "configs"  # Triton's kModelConfigFolder
KINDS = {"gpu": model_config_pb2.ModelInstanceGroup.KIND_GPU, "cpu": model_config_pb2.ModelInstanceGroup.KIND_CPU}


class PresetError(ValueError):
    """A preset that cannot apply to a model's config, on one line."""


def all_presets(settings_presets: Mapping[str, BatchingPreset]) -> dict[str, BatchingPreset]:
    """The built-in presets with the stack's `tuningPresets` added; a stack preset replaces a built-in of its name."""
    return {**BUILTIN_PRESETS, **settings_presets}


def _refusal(config, preset: BatchingPreset) -> str | None:
    """Why Triton could not run the model with the preset applied, or None."""
    if config.platform == "ensemble" or config.HasField("ensemble_scheduling"):
        return "an ensemble has no instance groups and no dynamic batching of its own; tune its steps' models instead"
    if preset.instance_kind == "cpu" and (config.platform == "tensorrt_plan" or config.backend == "tensorrt"):
        return "a TensorRT engine runs on GPUs only; use instanceKind: gpu"
    if not preset.dynamic_batching:
        return None
    if config.HasField("sequence_batching"):
        # model_config.proto: dynamic_batching, sequence_batching and ensemble_scheduling are one oneof.
        return ("the model uses sequence_batching, and Triton's dynamic and sequence batching exclude each other "
                "(scheduling_choice); use a preset with dynamicBatching: false")
    max_batch = preset.max_batch_size or config.max_batch_size
    if max_batch == 0:
        return ("the model does not batch (max_batch_size 0) and the preset sets no maxBatchSize; dynamic batching "
                "needs a batch dimension: set maxBatchSize, or dynamicBatching: false")
    over = [b for b in preset.preferred_batch_sizes if b > max_batch]
    if over:
        return f"preferredBatchSizes {over} exceed the max_batch_size {max_batch}"
    return None


def preset_variant(base_text: str, preset: BatchingPreset, where: str) -> str:
    """The model config `base_text` with `preset` applied, as Triton's text format (read back
    with Triton's parser); `where` (the config and the preset) names it in the errors."""
    config = parse_model_config(base_text, where)
    refusal = _refusal(config, preset)
    if refusal:
        raise PresetError(f"{where}: {refusal}")
    if preset.max_batch_size is not None:
        config.max_batch_size = preset.max_batch_size
    if preset.dynamic_batching:
        # The model's other batcher settings (priorities, queue policies, ordering) stay.
        batching = config.dynamic_batching
        batching.max_queue_delay_microseconds = preset.max_queue_delay_microseconds
        del batching.preferred_batch_size[:]
        batching.preferred_batch_size.extend(preset.preferred_batch_sizes)
    else:
        config.ClearField("dynamic_batching")
    del config.instance_group[:]
    config.instance_group.add(count=preset.instance_count, kind=KINDS[preset.instance_kind])
    text = text_format.MessageToString(config)
    parse_model_config(text, where)
    return text


def variant_key(model: str, preset: str) -> str:
    """Where a model's variant for `preset` lives, relative to the model repository."""
    return f"{model}/{CONFIGS_DIR}/{preset}.pbtxt"


def upload_variants(source_dir: str, presets: Mapping[str, BatchingPreset]) -> dict[str, str]:
    """`<model>/configs/<preset>.pbtxt` -> config text, for every model directory of the
    repository `source_dir` (a directory right under it holding config.pbtxt) and every preset.
    A variant the source already holds is refused: the upload would overwrite it."""
    if not presets:
        return {}
    root = Path(source_dir)
    variants: dict[str, str] = {}
    models = sorted(p.parent.name for p in root.glob(f"*/{CONFIG_FILE}") if p.is_file())
    for model in models:
        base_text = (root / model / CONFIG_FILE).read_text(encoding="utf-8")
        named = parse_model_config(base_text, f"{model}/{CONFIG_FILE}").name
        if named and named != model:
            # Triton loads a model only from the directory of its name.
            raise PresetError(f"{model}/{CONFIG_FILE}: names model {named!r}, not its directory {model!r}")
        for name, preset in presets.items():
            key = variant_key(model, name)
            if (root / key).exists():
                raise PresetError(f"{key}: the source already holds this file, which preset {name!r} would overwrite; "
                                  "rename or remove one of them")
            variants[key] = preset_variant(base_text, preset, f"{model}/{CONFIG_FILE} with preset {name!r}")
    return variants


def upload_preset_problems(s3: S3Cache, tuning_presets: Mapping[str, BatchingPreset]) -> list[tuple[KeyPath, str]]:
    """Each upload preset that is unknown or cannot apply to every model of the upload's
    source, with its key path below `weightCaches`."""
    presets = all_presets(tuning_presets)
    problems = unknown_preset_problems(s3, tuning_presets)
    for i, upload in enumerate(s3.uploads):
        for j, name in enumerate(upload.presets):
            path: KeyPath = ("s3", "uploads", i, "presets", j)
            if name not in presets:
                continue
            try:
                upload_variants(upload.source, {name: presets[name]})
            except ValueError as err:
                problems.append((path, str(err)))
    return problems


def upload_config_problems(s3: S3Cache, tuning_presets: Mapping[str, BatchingPreset]) -> list[tuple[KeyPath, str]]:
    """Weight uploads whose model repository holds a config.pbtxt Triton would refuse, or that
    name a tuning preset that cannot apply to one of its models (paths from `weightCaches`):
    refused before anything is uploaded, by the stack and WeightCaches used alone (the upload
    itself checks the configs again when it runs)."""
    broken = [(("s3", "uploads", i, "source"), f"{problem}; fix it before it is uploaded")
              for i, upload in enumerate(s3.uploads) for problem in broken_repository_configs(upload.source)]
    # Presets apply to the configs, so they are checked once every config parses.
    return broken or upload_preset_problems(s3, tuning_presets)
