"""Writing a patch into a stack file's own text: only the lines that change are written.

The base version's weight is edited in place on its line, and the new version is written as a
block of its own after the base's last line, in the layout of the base (its indentation, its flow
or block style); every other line stays byte for byte. So any indentation, CRLF line endings,
anchors and merge keys elsewhere in the file are kept. The new version is a plain copy: what the
base reads through an alias or a merge key (`<<`) is written out in full, with no anchor of its own.
A JSON stack file is rewritten as JSON, in its own indentation, when that reproduces it.
"""

from __future__ import annotations

import copy
import io
import json
import re
from typing import Any, Callable

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, merge_attrib

from .stackfile import StackFileError

# Indentations tried for the new version's nested keys and lists: the one that writes the base
# version back as written is used.
_MAPPING_INDENTS = (2, 4, 3)
_SEQUENCE_OFFSETS = (0, 2)


def line_ending(text: str, shown: str) -> str:
    """The file's line ending; refused when LF and CRLF are mixed (a written line would take one of them)."""
    crlf = text.count("\r\n")
    if crlf and crlf != text.count("\n"):
        raise StackFileError(shown, "mixed line endings (CRLF and LF); the patch writes lines with one of them, so "
                             "save the file with one kind of line ending first")
    return "\r\n" if crlf else "\n"


def is_json(text: str) -> bool:
    """A stack file in JSON form (a YAML flow mapping that is not JSON is edited as YAML)."""
    if not text.lstrip().startswith("{"):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def round_trip_yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 1 << 16  # never fold a long line
    return yaml


def splice_version(text: str, versions: CommentedSeq, index: int, new: CommentedMap, new_weight: int,
                   shown: str) -> str:
    """`text` (LF line endings) with versions[index]'s weight set to new_weight and `new` written
    after it, as an item of the same list."""
    lines = text.splitlines(keepends=True)
    base = versions[index]
    start = versions.lc.item(index)[0]
    if versions.fa.flow_style():
        raise StackFileError(shown, "the versions list is written in flow style ([...]); the patch adds a block list "
                             "item, so write the list one `- ` item per version", line_col=(start + 1, 1))
    if not lines[start].lstrip().startswith("-") and start > 0 and lines[start - 1].lstrip().startswith("-"):
        start -= 1  # the dash (and an anchor) on a line of its own
    dash = lines[start].find("-")
    if dash < 0 or lines[start][:dash].strip():
        raise StackFileError(shown, "the base version's list item does not start with `-` on its first line; "
                             "add the version by hand", line_col=(start + 1, 1))
    if "weight" not in base.lc.data:
        raise StackFileError(shown, "the base version's weight comes from an alias or a merge key (<<); the patch "
                             "lowers it on the version itself, so write `weight:` on the version",
                             line_col=(start + 1, dash + 1))
    line, col = base.lc.value("weight")
    number = re.match(r"[0-9]+", lines[line][col:])
    if number is None:
        raise StackFileError(shown, "the base version's weight is not written as a plain number; the patch edits "
                             "that number in place", line_col=(line + 1, col + 1))
    lines[line] = lines[line][:col] + str(new_weight) + lines[line][col + number.end():]
    end = _item_end(lines, _last_line(base), dash)
    block = _as_item(new, base, lines[start:end + 1], dash)
    if not lines[end].endswith("\n"):
        lines[end] += "\n"
    return "".join(lines[:end + 1]) + block + "".join(lines[end + 1:])


def plain_version(base: CommentedMap, edit: Callable[[CommentedMap], None]) -> CommentedMap:
    """A copy of base with what it reads through aliases and merge keys written out, no anchors,
    then `edit`ed."""
    new = copy.deepcopy(base)
    _expand(new, set())
    edit(new)
    return new


def _expand(node: Any, seen: set[int]) -> None:
    if not isinstance(node, (CommentedMap, CommentedSeq)):
        return
    if getattr(node, "anchor", None) is not None and node.anchor.value:
        node.yaml_set_anchor(None)
    if isinstance(node, CommentedMap) and getattr(node, merge_attrib, None):
        node._ok.update(node.keys())  # merged keys become the copy's own
        setattr(node, merge_attrib, [])
    items = node.items() if isinstance(node, CommentedMap) else enumerate(node)
    for key, value in list(items):
        if _anchored_scalar(value):
            node[key] = value = copy.copy(value)
            value.yaml_set_anchor(None)
        if isinstance(value, (CommentedMap, CommentedSeq)):
            if id(value) in seen:  # a second use of one node (an alias): a copy of its own
                value = copy.deepcopy(value)
                node[key] = value
            seen.add(id(value))
            _expand(value, seen)


def _anchored_scalar(value: Any) -> bool:
    anchor = getattr(value, "anchor", None) if not isinstance(value, (CommentedMap, CommentedSeq)) else None
    return anchor is not None and bool(anchor.value)


def _last_line(node: Any) -> int:
    """The last line (0-based) on which a key or value of node starts."""
    last = node.lc.line
    for key, position in node.lc.data.items():
        last = max(last, position[0], position[2] if len(position) > 2 else position[0])
        child = node[key]
        if isinstance(child, (CommentedMap, CommentedSeq)) and child.lc.line >= node.lc.line:
            last = max(last, _last_line(child))
    return last


def _item_end(lines: list[str], last: int, dash: int) -> int:
    """The item's last line: its last key's line and the continuation lines of a multi-line value
    (indented past the dash); comment and blank lines after it stay after the new version."""
    while last + 1 < len(lines):
        following = lines[last + 1]
        stripped = following.strip()
        if not stripped or stripped.startswith("#") or len(following) - len(following.lstrip(" ")) <= dash:
            break
        last += 1
    return last


def _as_item(new: CommentedMap, base: CommentedMap, written: list[str], dash: int) -> str:
    """new as a list item at column `dash`, in the indentation that writes `base` as `written`."""
    sequence = max(2, base.lc.col - dash)  # from the dash to the item's first key (or its flow mapping)
    best, best_score = None, -1
    for mapping in _MAPPING_INDENTS:
        for offset in _SEQUENCE_OFFSETS:
            yaml = round_trip_yaml()
            yaml.indent(mapping=mapping, sequence=max(sequence, offset + 2), offset=offset)
            score = _same_lines(_dump_item(yaml, plain_version(base, lambda _: None), dash, sequence), written)
            if score > best_score:
                best, best_score = yaml, score
    return _dump_item(best, new, dash, sequence)


def _dump_item(yaml: YAML, node: CommentedMap, dash: int, sequence: int) -> str:
    out = io.StringIO()
    yaml.dump(CommentedSeq([node]), out)
    text = out.getvalue()
    # The first line's dash is followed by as many spaces as the file's own item.
    first, _, rest = text.partition("\n")
    first = "-" + " " * (sequence - 1) + first.lstrip(" ")[1:].lstrip(" ")
    # Full-line comments copied from the base keep the column they were written at.
    return "".join(" " * dash + line if line.strip() and not line.lstrip().startswith("#") else line
                   for line in f"{first}\n{rest}".splitlines(True))


def _same_lines(text: str, written: list[str]) -> int:
    return sum(a == b for a, b in zip(text.splitlines(), (w.rstrip("\n") for w in written), strict=False))


def json_indent(text: str) -> int:
    """The indentation of a JSON document's second line (0 for one line)."""
    lines = text.splitlines()
    return len(lines[1]) - len(lines[1].lstrip(" ")) if len(lines) > 1 else 0


def patched_json(text: str, edit: Callable[[dict[str, Any]], None], shown: str) -> str:
    """A JSON stack file with `edit` applied to its document, written as json.dumps writes it in the
    file's indentation; refused when that would change lines the patch does not."""
    doc = json.loads(text)
    indent = json_indent(text) or None
    if _json_text(doc, indent, text) != text:
        raise StackFileError(shown, f"a JSON stack file laid out other than json.dumps(indent={indent}) writes it: "
                             "the patch would reformat lines it does not change; add the version by hand")
    edit(doc)
    return _json_text(doc, indent, text)


def _json_text(doc: Any, indent: Any, like: str) -> str:
    text = json.dumps(doc, indent=indent, ensure_ascii=False)
    return text + "\n" if like.endswith("\n") else text
