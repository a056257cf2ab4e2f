"""Placeholders: values a stack file holds until somebody fills them in (`platformctl init`
writes them where the platform cannot know the value: a node selector, a flavor, the NFS
export, the S3 endpoint). Each is refused, naming its key, so a stack never plans, and never
reaches `pulumi up`, with a made-up server or label in it."""

from __future__ import annotations

from typing import Any

from inference_platform.settings.errors import KeyPath

PLACEHOLDER = "REPLACE-ME"


def is_placeholder(text: str) -> bool:
    return PLACEHOLDER.lower() in text.lower()


def placeholder_problems(raw: dict[str, Any]) -> list[tuple[KeyPath, str]]:
    """(key path, problem) for every key or value of the config (keys without the namespace)
    that holds the placeholder, at any depth."""
    problems: list[tuple[KeyPath, str]] = []

    def refuse(path: KeyPath, text: str, what: str) -> None:
        problems.append((path, f"{what} {text!r} is a placeholder ({PLACEHOLDER}...) that `platformctl init` wrote; "
                               "allowed: this stack's real value (the comment above the key says what it is)"))

    def walk(value: Any, path: KeyPath) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, str) and is_placeholder(key):
                    refuse((*path, key), key, "the key")
                walk(item, (*path, key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, (*path, i))
        elif isinstance(value, str) and is_placeholder(value):
            refuse(path, value, "the value")

    for key, value in raw.items():
        walk(value, (key,))
    return problems
