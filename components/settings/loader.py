"""Loading a stack's settings: the one place that runs every check of a stack file.

The schema (the section modules of settings/) checks shape, types and ranges; then the stack
checks below run, in stages. Everything here runs before any resource exists and imports no
module that builds resources (tests/unit/test_imports.py checks it).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable, Optional

from pydantic import ValidationError

from inference_platform.gpu.node_labels import cluster_operator_problems, contract_problems
from inference_platform.gpu.profiles import check_gpu_settings
from inference_platform.serving.llm_memory import llm_memory_problems
from inference_platform.settings.base import NAMESPACE
from inference_platform.settings.checks import CROSS_CHECKS, deployment_name_clashes, llm_basic_auth_problems
from inference_platform.settings.errors import MISSING, ConfigError, KeyPath, how_to_set_secret, pydantic_problems
from inference_platform.settings.identity import stack_name_problems
from inference_platform.settings.namespaces import namespace_problems, near_miss_hint
from inference_platform.settings.placeholders import placeholder_problems
from inference_platform.settings.stack import SECRET_KEYS, Settings, secure_value_refused
from inference_platform.settings.training import training_section_problems
from inference_platform.training.capacity import training_capacity_problems
from inference_platform.tuning.perf_inputs import tuned_shape_problems
from inference_platform.tuning.presets import upload_config_problems as upload_configs


def parse_settings(raw: dict[str, Any], stack_file: str, secret_keys: frozenset[str] = frozenset(),
                   other_keys: Iterable[str] = (), stack: Optional[str] = None) -> Settings:
    """Validate a dict of config keys (without the namespace prefix) into Settings, or raise
    ConfigError with every problem the schema finds. `other_keys`: the file's keys in other
    namespaces (`openstack:authUrl`), refused where they misspell ours. `stack`: the stack's
    name, checked against customer and environment (settings/identity.py); None for settings
    that belong to no stack of this project (a component used alone)."""
    other_keys = tuple(other_keys)
    problems: list[tuple[KeyPath, str]] = namespace_problems(other_keys)
    problems += [((key,), f"must be a secret, not plain text: {how_to_set_secret(key)}")
                 for key in SECRET_KEYS if key in raw and key not in secret_keys]
    # The engine marks a key secret when a value inside it is: only the secret keys may hold one.
    problems += [((key,), secure_value_refused((key,))) for key in sorted(secret_keys - set(SECRET_KEYS)) if key in raw]
    # A placeholder left in would make its own schema errors; it is named, alone, until filled in.
    placeholders = placeholder_problems(raw)
    if placeholders:
        raise ConfigError(stack_file, problems + placeholders, source=raw)
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as err:
        schema = [(path, msg + near_miss_hint(path, other_keys) if msg == MISSING else msg)
                  for path, msg in pydantic_problems(err, SECRET_KEYS, Settings)]
        raise ConfigError(stack_file, problems + schema, source=raw) from None
    if problems:
        raise ConfigError(stack_file, problems, source=raw)
    for n, stage in enumerate(STACK_CHECKS):
        problems = [problem for check in stage for problem in check(settings)]
        if n == 0:
            problems += stack_name_problems(settings, stack)
        if problems:
            raise ConfigError(stack_file, problems, source=raw)
    return settings


def _decode(value: Any) -> Any:
    # Structured values arrive from the engine as JSON text; scalars as plain strings.
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def load_settings() -> Settings:
    """Read this stack's `inference-platform:*` config from the Pulumi runtime."""
    import pulumi
    from pulumi.runtime import config as runtime_config

    merged = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secret = set(runtime_config._SECRET_KEYS.get()) | set(runtime_config.get_config_secret_keys_env())
    stack = pulumi.get_stack()
    return settings_from_config(merged, secret, f"stacks/Pulumi.{stack}.yaml", stack)


def settings_from_config(config: dict[str, Any], secret_keys: Iterable[str], stack_file: str,
                         stack: Optional[str] = None) -> Settings:
    """Settings from config as the engine passes it (`inference-platform:<key>` -> text or JSON
    text; other namespaces ignored unless they misspell ours), or ConfigError naming stack_file;
    `stack`, where known, is checked against customer and environment."""
    prefix = NAMESPACE + ":"
    raw = {k[len(prefix):]: _decode(v) for k, v in config.items() if k.startswith(prefix)}
    secrets = frozenset(k[len(prefix):] for k in secret_keys if k.startswith(prefix))
    return parse_settings(raw, stack_file, secrets, [k for k in config if not k.startswith(prefix)], stack)


def upload_config_problems(settings: Settings) -> list[tuple[KeyPath, str]]:
    """The configs and presets of the weight uploads (tuning/presets.py upload_config_problems)."""
    s3 = settings.weight_caches.s3
    return [] if s3 is None else [(("weightCaches", *path), why) for path, why in upload_configs(s3, settings.tuning_presets)]


Check = Callable[[Settings], list[tuple[KeyPath, str]]]
# Every check of a stack, after the schema, in the order they run. A stage runs only when the
# stages before it found nothing: its checks rely on what those established (every group a
# version names exists, every cache it reads is configured).
STACK_CHECKS: tuple[tuple[Check, ...], ...] = (
    # settings/checks.py: production, node groups, cluster, OS, capacity, platform parts, UIs, alerting, tuning,
    # services and graphs (parse_settings adds the stack name's check, settings/identity.py, to this stage)
    CROSS_CHECKS,
    (
        check_gpu_settings,  # gpu/profiles.py: MIG layouts, GPU shares, capacity per group
        llm_memory_problems,  # serving/llm_memory.py: each LLM version fits its GPU share
        contract_problems,  # gpu/node_labels.py: the node contract NFD can apply
        cluster_operator_problems,  # gpu/node_labels.py: what a magnum-capi-helm cluster's own GPU operator cannot do
        upload_config_problems,  # the configs a weight upload carries, and their presets
        tuned_shape_problems,  # tuning/perf_inputs.py: the shapes Perf Analyzer sends an uploaded tuned model
        deployment_name_clashes,  # settings/checks.py: one Deployment name per version and namespace
        llm_basic_auth_problems,  # settings/checks.py: Basic Auth on an LLM service's own Gateway needs the platform's mesh
        training_section_problems,  # settings/training.py: teams, runtimes, jobs' placement, mesh degrees and caches
    ),
    # training/capacity.py: the teams' quotas and the serving-first proof, on GPU groups and requests
    # the stages above found sound.
    (training_capacity_problems,),
)
