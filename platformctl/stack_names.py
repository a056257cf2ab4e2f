"""Stack names: the only user text that becomes part of a path (stacks/, build/)."""

from __future__ import annotations

import re
from pathlib import Path

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


_STACK_FILE = re.compile(r"(?:.*/)?Pulumi\.([a-z0-9][a-z0-9._-]*)\.ya?ml")


def check_stack_name(name: str) -> str:
    """The name itself when it is a plain stack name; no separator or `..` can reach a path."""
    if len(name) > MAX_LENGTH or not _GRAMMAR.fullmatch(name) or ".." in name:
        hint = ""
        if (m := _STACK_FILE.fullmatch(name)) and ".." not in m.group(1):
            # A stack file's path where a name belongs: say both ways to plan it.
            hint = f"; for that file give the stack's name, {m.group(1)!r}, or --stack-file {shown(name)}"
        raise InvalidStackName(f"invalid stack name {shown(name)}: {RULE}{hint}")
    return name


def known_stacks(stacks_dir: Path) -> list[str]:
    """The stacks whose files are in stacks_dir (Pulumi.<stack>.yaml), by name."""
    names = (p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in stacks_dir.glob("Pulumi.*.yaml"))
    return sorted(n for n in names if _GRAMMAR.fullmatch(n) and ".." not in n)
