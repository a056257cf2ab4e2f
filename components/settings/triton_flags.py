"""The Triton server flags a version may set (`serverArgs`): the allowed flags and their grammar,
checked against Triton r25.01's parser (tests/catalogues/tritonserver-r25.01-flags.txt).
"""

from __future__ import annotations

import re
from typing import Any, Optional, Union

# Triton flags a version may set through serverArgs (long option names of tritonserver's
# command-line parser, src/command_line_parser.cc at r25.01; tests/catalogues holds the
# list). Flags the platform sets itself (ports, repository, model control, metrics
# switches) and ones that would reach outside the pod (log-file, directories) are absent.
# So are --http-restricted-api and --grpc-restricted-protocol: the platform closes every API
# category but inference, health and metadata with them (serving/triton_api.py), and Triton
# refuses a category named in two groups (ParseRestrictedFeatureOption), so a stack could only
# break that restriction or move a category under a key of its own, in the manifest's text.
TRITON_SERVER_FLAGS = frozenset({
    "log-verbose", "log-info", "log-warning", "log-error", "log-format",
    "exit-on-error", "strict-readiness", "exit-timeout-secs",
    "model-load-thread-count", "model-load-retry-count", "model-load-gpu-limit",
    "http-thread-count", "http-header-forward-pattern",
    "grpc-infer-allocation-pool-size", "grpc-infer-response-compression-level",
    "grpc-keepalive-time", "grpc-keepalive-timeout", "grpc-header-forward-pattern",
    "metrics-interval-ms", "metrics-config", "trace-config", "backend-config", "cache-config",
    "rate-limit", "rate-limit-resource", "pinned-memory-pool-byte-size",
    "cuda-memory-pool-byte-size", "min-supported-compute-capability",
    "buffer-manager-thread-count", "host-policy",
})


# Flags whose every occurrence the parser keeps (it appends to a list or a map per backend,
# cache, trace mode, resource, policy or device): they take a list of values. Any other
# flag given twice keeps its last value only, so a list there is refused.
TRITON_REPEATABLE_FLAGS = frozenset({
    "backend-config", "metrics-config", "cache-config", "trace-config", "rate-limit-resource",
    "host-policy", "model-load-gpu-limit", "cuda-memory-pool-byte-size",
})


# Triton waits this long after SIGTERM for in-flight requests; the platform sets it from the
# service's timeoutSeconds, and serverArgs may only raise it.
EXIT_TIMEOUT_FLAG = "exit-timeout-secs"


# Value grammar per flag (Triton's command-line parser): integers, booleans, floats, choices,
# `<device>:<number>` pairs; any other flag takes one printable token.
_TRITON_INT_FLAGS = frozenset({
    "log-verbose", "exit-timeout-secs", "model-load-thread-count", "model-load-retry-count", "http-thread-count",
    "grpc-infer-allocation-pool-size", "grpc-keepalive-time", "grpc-keepalive-timeout", "metrics-interval-ms",
    "pinned-memory-pool-byte-size", "buffer-manager-thread-count",
})


_TRITON_BOOL_FLAGS = frozenset({"log-info", "log-warning", "log-error", "exit-on-error", "strict-readiness"})


_TRITON_CHOICES = {
    "log-format": ("default", "ISO8601"),
    "grpc-infer-response-compression-level": ("none", "low", "medium", "high"),
    "rate-limit": ("execution_count", "off"),
}


_TRITON_PATTERNS = {
    "min-supported-compute-capability": (r"[0-9]{1,3}(\.[0-9]{1,3})?", "a number such as 8.0"),
    "cuda-memory-pool-byte-size": (r"[0-9]{1,3}:[0-9]{1,20}", "<GPU device id>:<bytes>, e.g. 0:67108864"),
    "model-load-gpu-limit": (r"[0-9]{1,3}:(0(\.[0-9]{1,6})?|1(\.0{1,6})?|\.[0-9]{1,6})", "<GPU device id>:<fraction 0-1>, e.g. 0:0.9"),
}


FlagValue = Union[str, list[str]]


def triton_flag_problem(flag: str, value: FlagValue) -> Optional[str]:
    """Why a serverArgs entry is refused, or None."""
    if flag not in TRITON_SERVER_FLAGS:
        return f"Triton flag {flag!r} is not allowed here; allowed: {', '.join(sorted(TRITON_SERVER_FLAGS))}"
    if isinstance(value, list):
        if flag not in TRITON_REPEATABLE_FLAGS:
            return (f"--{flag} takes one value, not a list; lists are for the flags Triton repeats: "
                    f"{', '.join(sorted(TRITON_REPEATABLE_FLAGS))}")
        if not value:
            return f"--{flag} needs at least one value (leave the key out for none)"
        return next((p for p in (_triton_value_problem(flag, v) for v in value) if p), None)
    return _triton_value_problem(flag, value)


def _triton_value_problem(flag: str, value: str) -> Optional[str]:
    if flag in _TRITON_INT_FLAGS and not re.fullmatch(r"[0-9]{1,12}", value):
        return f"--{flag} takes a non-negative integer, not {value!r}"
    if flag in _TRITON_BOOL_FLAGS and value not in ("true", "false"):
        return f"--{flag} takes true or false, not {value!r}"
    if flag in _TRITON_CHOICES and value not in _TRITON_CHOICES[flag]:
        return f"--{flag} takes one of {', '.join(_TRITON_CHOICES[flag])}, not {value!r}"
    if flag in _TRITON_PATTERNS and not re.fullmatch(_TRITON_PATTERNS[flag][0], value):
        return f"--{flag} takes {_TRITON_PATTERNS[flag][1]}, not {value!r}"
    if not re.fullmatch(r"[!-~]{1,1024}", value) or value.startswith("-"):
        return f"--{flag} value {value!r} must be one token of printable ASCII (no spaces, not starting with '-')"
    return None


def _flag_values_as_text(args: Any) -> Any:
    # `pulumi config set --path ...serverArgs.log-verbose 1` stores the integer 1, and
    # `...serverArgs.backend-config[0] ...` a list whose items may be integers too.
    def text(v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    if isinstance(args, dict):
        return {k: [text(i) for i in v] if isinstance(v, list) else text(v) for k, v in args.items()}
    return args
