"""What Perf Analyzer sends a tuned model, checked against the model's config where the plan has it.

Perf Analyzer cannot make up a variable dimension (-1 in the config besides the batch
dimension): without `--shape` it fails every measurement (perf_analyzer docs/input_data.md,
"For models with variable-sized inputs you must provide the --shape argument"), and Model
Analyzer ends with nothing to publish. A tuned version's `tuning.shapes` gives them. The plan
can read a model's config only when a weight upload of the stack carries the version's
repository; then every variable input needs a shape, and every shape must fit its input.
Creates no resources.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Optional

from inference_platform.serving.model_config import CONFIG_FILE, ModelConfigError, parse_model_config
from inference_platform.settings.errors import KeyPath
from inference_platform.settings.serving import Version
from inference_platform.settings.stack import Settings


def local_config(version: Version, settings: Settings) -> Optional[tuple[str, Path]]:
    """(`weightCaches.s3.uploads[i].source/...`, path) of the tuned model's config.pbtxt when an
    upload of this stack carries the version's repository, else None."""
    s3 = settings.weight_caches.s3
    if s3 is None or version.tuning is None or version.model_repository.cache != "s3":
        return None
    path = PurePosixPath(version.model_repository.path.strip("/"))
    for i, upload in enumerate(s3.uploads):
        prefix = PurePosixPath(upload.prefix.strip("/"))
        if path == prefix or prefix in path.parents:
            relative = path.relative_to(prefix) / version.tuning.model / CONFIG_FILE
            file = Path(upload.source) / relative
            if file.is_file():
                return f"weightCaches.s3.uploads[{i}].source/{relative.as_posix()}", file
    return None


def shape_problems(config_text: str, where: str, shapes: dict[str, list[int]], model: str) -> list[tuple[KeyPath, str]]:
    """Variable inputs without a shape and shapes that do not fit their input (paths relative to
    the version's `tuning`). A config listing no inputs (Triton completes it from the model
    file) tells nothing."""
    config = parse_model_config(config_text, where)
    inputs = {i.name: list(i.dims) for i in config.input}
    if not inputs:
        return []
    problems: list[tuple[KeyPath, str]] = []
    for name, dims in inputs.items():
        if -1 in dims and name not in shapes:
            example = [d if d != -1 else "<n>" for d in dims]
            problems.append((("shapes",), f"input {name!r} of model {model!r} has variable dims {dims} ({where}) and no "
                             f"shape: Perf Analyzer cannot choose one; allowed: shapes.{name}: "
                             f"[{', '.join(str(d) for d in example)}] with each <n> a size it should send"))
    for name, shape in shapes.items():
        dims = inputs.get(name)
        if dims is None:
            problems.append((("shapes", name), f"model {model!r} has no input {name!r} ({where}); "
                             f"inputs: {', '.join(sorted(inputs))}"))
        elif len(shape) != len(dims) or any(d not in (-1, s) for d, s in zip(dims, shape, strict=True)):
            problems.append((("shapes", name), f"{shape} does not fit the input's dims {dims} ({where}); allowed: "
                             f"{len(dims)} sizes, equal to each fixed dim"))
    return problems


def tuned_shape_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    """Every tuned version whose model's config the stack uploads: its variable inputs have
    shapes that fit them. Runs after the uploads' configs are known to parse."""
    problems: list[tuple[KeyPath, str]] = []
    for si, svc in enumerate(settings.services):
        for vi, version in enumerate(svc.versions):
            found = local_config(version, settings)
            if found is None:
                continue
            where, file = found
            try:
                text = file.read_text(encoding="utf-8")
                own = shape_problems(text, where, version.tuning.shapes, version.tuning.model)
            except (OSError, UnicodeDecodeError, ModelConfigError):
                continue  # upload_config_problems reports an unreadable config
            problems += [(("services", si, "versions", vi, "tuning", *path), why) for path, why in own]
    return problems
