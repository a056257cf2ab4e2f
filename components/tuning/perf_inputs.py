"""What Perf Analyzer sends a tuned model, checked against the model's config where the plan has it.

Perf Analyzer cannot make up a variable dimension (-1 in the config besides the batch
dimension): without `--shape` it fails every measurement (perf_analyzer docs/input_data.md,
"For models with variable-sized inputs you must provide the --shape argument"), and Model
Analyzer ends with nothing to publish. A tuned version's `tuning.shapes` gives them. The plan
can read a model's config only when a weight upload of the stack carries the version's
repository; then every variable input needs a shape, and every shape must fit its input. For
the other models the run checks the same rule (model_tools/perf_shapes.py) before its Triton
server starts, and the plan says so (`unseen_tuned_models`). Creates no resources.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Optional

from inference_platform.model_tools import perf_shapes
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
    the version's `tuning`): model_tools/perf_shapes.py's rule, which a run checks again in its
    pod for the models the plan cannot see. A config listing no inputs tells nothing."""
    return perf_shapes.shape_problems(parse_model_config(config_text, where), shapes, model, where)


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


def unseen_tuned_models(settings: Settings) -> list[str]:
    """One plan line per Model Analyzer run whose model's config the plan cannot read (its
    repository is not one of the stack's uploads): the run checks the shapes when it starts."""
    lines = []
    for svc in settings.services:
        for version in svc.versions:
            tuning, repo = version.tuning, version.model_repository
            if tuning is None or version.llm_backend is not None or local_config(version, settings) is not None:
                continue
            lines.append(f"tuning: services[{svc.name}].versions[{version.name}]: model {tuning.model!r} is not uploaded "
                         f"by this stack ({repo.cache} {repo.path.strip('/')}/{tuning.model}/{CONFIG_FILE}); its run "
                         "checks tuning.shapes against that config before its Triton server starts")
    return lines
