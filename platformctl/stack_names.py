"""Stack names: the only user text that becomes part of a path (stacks/, build/)."""

from __future__ import annotations

import re

from .errors import UsageError

# Pulumi's own limit on a stack name's length; it also keeps file names far below NAME_MAX.
MAX_LENGTH = 100
_GRAMMAR = re.compile(r"[a-z0-9][a-z0-9._-]*")
RULE = (
    f"a stack name is 1-{MAX_LENGTH} characters of a-z, 0-9, '.', '_' and '-', "
    "starts with a letter or digit and contains no '..'"
)


class InvalidStackName(UsageError):
    pass


def shown(text: str, limit: int = 80) -> str:
    """User text quoted for a one-line message: escapes visible, long text cut."""
    if len(text) > limit:
        return repr(text[:limit]) + f"... ({len(text)} characters)"
    return repr(text)


def check_stack_name(name: str) -> str:
    """The name itself when it is a plain stack name; no separator or `..` can reach a path."""
    if len(name) > MAX_LENGTH or not _GRAMMAR.fullmatch(name) or ".." in name:
        raise InvalidStackName(f"invalid stack name {shown(name)}: {RULE}")
    return name
