"""The one loader of stack files: strict, bounded YAML into the config the engine passes.

A stack file is read the way Pulumi's own CLI reads it (YAML 1.2 core scalars:
`yes`, `on` and `2024-01-01` are strings, not a boolean or a date), and more
strictly: one document, a mapping at the top, string keys only, no duplicate keys,
merge keys (`<<`) expanded as Pulumi's reader (Go's yaml.v3) expands them,
no explicit tags, no null values, and bounded size, nesting depth and alias
expansion, so a hostile file is refused in milliseconds. Every failure is a
``StackFileError`` that prints as one line, `file:line:col: what is wrong`. Other
documents the CLI reads (a stack patch) go through the same reader (parse_mapping).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from inference_platform.settings.errors import ConfigError
from platformctl.yaml_errors import syntax_message

MAX_BYTES = 1 << 20
MAX_DEPTH = 32
# Nodes after alias expansion; a 1,000-service stack has about 60,000.
MAX_NODES = 500_000
# Top-level keys of a Pulumi stack file (pkg/workspace ProjectStack).
STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")
_CONFIG_KEY = re.compile(r"([A-Za-z0-9_.-]+:)?[A-Za-z0-9_-][A-Za-z0-9_.-]*")

MERGE = "<<"  # a plain (unquoted) `<<` key merges mappings into its own
STR, INT, FLOAT, BOOL, NULL = (f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null"))


class StackFileError(ConfigError):
    """A stack file that is not a well-formed, bounded YAML mapping."""

    def __init__(self, stack_file: str, message: str, mark: Optional[yaml.Mark] = None, line_col: tuple[int, int] = ()):
        if mark is not None:
            line_col = (mark.line + 1, mark.column + 1)
        self.location = ":".join([stack_file, *map(str, line_col)])
        self.message = message
        super().__init__(stack_file, [])

    def one_line(self) -> str:
        return f"{self.location}: {self.message}".replace("\n", "\\n").replace("\r", "\\r")

    def lines(self) -> list[str]:
        return [self.one_line()]


class _CoreResolver(yaml.resolver.BaseResolver):
    """YAML 1.2 core schema, as Pulumi's Go YAML library resolves plain scalars."""


_CoreResolver.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    (BOOL, r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (INT, r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (FLOAT, r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     "-+.0123456789"),
    (NULL, r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
):
    _CoreResolver.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


class _Loader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer, _CoreResolver):
    def __init__(self, text: str):
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        _CoreResolver.__init__(self)


def _scalar(node: ScalarNode, stack_file: str) -> Any:
    value = node.value
    if node.tag == STR:
        return value
    if node.tag == BOOL:
        return value.lower() == "true"
    if node.tag == INT:
        if re.fullmatch(r"[-+]?0[0-9]+", value):
            # YAML readers disagree (Go's reads 0755 as octal 493): refuse rather than guess.
            raise StackFileError(stack_file, f"ambiguous number {value} (a leading zero reads as octal in some "
                                 "YAML readers); write it without the zero, or quote it", node.start_mark)
        return int(value, 0) if value[:2] in ("0o", "0x") else int(value)
    if node.tag == FLOAT:
        number = float(value.lower().replace(".inf", "inf").replace(".nan", "nan"))
        return number
    raise StackFileError(stack_file, "null is not a value; remove the key to use its default", node.start_mark)


class _Builder:
    """Checks the composed node graph, then builds plain Python values from it."""

    def __init__(self, stack_file: str):
        self.stack_file = stack_file
        self.sizes: dict[int, int] = {}

    def fail(self, message: str, node: Node) -> StackFileError:
        return StackFileError(self.stack_file, message, node.start_mark)

    def expanded_size(self, node: Node, depth: int = 0) -> int:
        """Nodes after alias expansion, memoised per node so a bomb costs its own size to measure."""
        if depth > MAX_DEPTH:
            raise self.fail(f"nesting deeper than {MAX_DEPTH} levels", node)
        known = self.sizes.get(id(node))
        if known is not None:
            return known
        self.sizes[id(node)] = MAX_NODES + 1  # a cycle through an alias counts as too large
        if isinstance(node, ScalarNode):
            size = 1
        elif isinstance(node, SequenceNode):
            size = 1 + sum(self.expanded_size(n, depth + 1) for n in node.value)
        else:
            size = 1 + sum(self.expanded_size(k, depth + 1) + self.expanded_size(v, depth + 1) for k, v in node.value)
        if size > MAX_NODES:
            raise self.fail(f"the document expands to more than {MAX_NODES} values (aliases)", node)
        self.sizes[id(node)] = size
        return size

    def build(self, node: Node) -> Any:
        if isinstance(node, ScalarNode):
            return _scalar(node, self.stack_file)
        if isinstance(node, SequenceNode):
            return [self.build(n) for n in node.value]
        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag != STR:
                raise self.fail(f"mapping keys must be strings, not {_kind(key_node)}", key_node)
            key = key_node.value
            if key in first_line:
                raise self.fail(f"duplicate key {key!r} (first at line {first_line[key]}); each key may appear once",
                                key_node)
            first_line[key] = key_node.start_mark.line + 1
            if key == MERGE and key_node.style is None:
                self.merge(out, first_line, key_node, value_node)
            else:
                out[key] = self.build(value_node)
        return out

    def merge(self, out: dict[str, Any], first_line: dict[str, int], at: Node, value: Node) -> None:
        """A merge key (`<<: *base`, `<<: [*a, *b]`) expanded as Pulumi's reader (Go's yaml.v3)
        expands it: the merged mappings' keys are set where `<<` stands, earlier mappings of a
        list taking precedence, and keys after `<<` override them."""
        sources = value.value if isinstance(value, SequenceNode) else [value]
        if not sources or not all(isinstance(n, MappingNode) for n in sources):
            raise self.fail("a merge key (<<) takes a mapping or a list of mappings, such as `<<: *base`", at)
        for source in reversed(sources):
            merged = self.build(source)
            for key in merged:
                if key in first_line and key != MERGE:
                    # yaml.v3 lets the merged value win over a key written before `<<`; the YAML merge
                    # spec and most other readers keep the written key: refuse rather than guess.
                    raise self.fail(f"key {key!r} (line {first_line[key]}) comes before the merge key (<<) that "
                                    "also sets it, and YAML readers disagree on which wins; write it after `<<`", at)
            out.update(merged)


def _kind(node: Node) -> str:
    if isinstance(node, ScalarNode):
        return {STR: "a string", INT: "an integer", FLOAT: "a number", BOOL: "a boolean", NULL: "null"}[node.tag]
    return "a mapping" if isinstance(node, MappingNode) else "a sequence"


def _check_events(loader: _Loader, stack_file: str, what: str) -> None:
    """Depth, tags and document count from the event stream, before anything is composed
    (composition recurses, so depth must be bounded first)."""
    depth, documents = 0, 0
    while loader.check_event():
        event = loader.get_event()
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise StackFileError(stack_file, f"more than one YAML document; {what} is one mapping",
                                     event.start_mark)
        tag = getattr(event, "tag", None)
        if tag is not None and not (isinstance(event, yaml.ScalarEvent) and tag == "!"):
            shown = tag.replace("tag:yaml.org,2002:", "!!")
            raise StackFileError(stack_file, f"explicit YAML tag {shown!r} is not allowed; "
                                 "allowed: plain scalars, mappings and sequences", event.start_mark)
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise StackFileError(stack_file, f"nesting deeper than {MAX_DEPTH} levels", event.start_mark)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _text(data: bytes, stack_file: str, what: str) -> str:
    if len(data) > MAX_BYTES:
        raise StackFileError(stack_file, f"file is {len(data)} bytes; {what} may have at most {MAX_BYTES}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _not_utf8(data, stack_file, what) from None
    bad = re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text)
    if bad:
        line = text.count("\n", 0, bad.start()) + 1
        column = bad.start() - text.rfind("\n", 0, bad.start())
        raise StackFileError(stack_file, f"control character {bad.group()!r}; only tab and line breaks are allowed",
                             line_col=(line, column))
    return text


def _not_utf8(data: bytes, stack_file: str, what: str) -> StackFileError:
    """Where the first byte that is not UTF-8 lies, as the editor shows it: line and column
    counted in characters of the valid text before it."""
    body = data.removeprefix(b"\xef\xbb\xbf")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as err:
        before, bad = body[:err.start].decode("utf-8"), body[err.start]
    lines = before.split("\n")
    return StackFileError(stack_file, f"byte 0x{bad:02x} is not UTF-8; {what} is UTF-8 text (save it as UTF-8)",
                          line_col=(len(lines), len(lines[-1]) + 1))


def _document(data: bytes, name: str, what: str) -> tuple[_Builder, Optional[MappingNode]]:
    """The checked root mapping of a document (None when empty) and the builder that checked it."""
    text = _text(data, name, what)
    try:
        _check_events(_Loader(text), name, what)
        root = _Loader(text).get_single_node()
    except yaml.MarkedYAMLError as err:
        message, mark = syntax_message(err, text)
        raise StackFileError(name, message, mark) from None
    except yaml.YAMLError as err:
        raise StackFileError(name, f"YAML error: {err}") from None
    builder = _Builder(name)
    if root is None:
        return builder, None
    if not isinstance(root, MappingNode):
        raise StackFileError(name, f"the document is {_kind(root)}; {what} is one mapping", root.start_mark)
    builder.expanded_size(root)
    return builder, root


def parse_mapping(data: bytes, name: str, what: str) -> dict[str, Any]:
    """A YAML (or JSON) document that must be one mapping, read as strictly as a stack file;
    `what` names the kind of file in errors ("a patch")."""
    builder, root = _document(data, name, what)
    return {} if root is None else builder.build(root)


def parse_stack_text(data: bytes, stack_file: str) -> dict[str, Any]:
    """The whole stack file as a plain mapping, or StackFileError."""
    builder, root = _document(data, stack_file, "a stack file")
    if root is None:
        return {}
    doc = builder.build(root)
    for key_node, _ in root.value:
        if key_node.value not in STACK_FILE_KEYS:
            raise builder.fail(f"unknown top-level key {key_node.value!r}; allowed: {', '.join(STACK_FILE_KEYS)}",
                               key_node)
    return doc


def read_stack_config(stack_file: Path, shown_as: Optional[str] = None) -> dict[str, Any]:
    """The `config:` mapping of a stack file, keys as written (`ns:key` or bare `key`)."""
    name = shown_as or str(stack_file)
    try:
        data = stack_file.read_bytes()
    except OSError as err:
        raise StackFileError(name, f"cannot read the stack file: {err.strerror}") from None
    return stack_config_of(parse_stack_text(data, name), name)


def stack_config_of(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """The `config:` mapping of a parsed stack file (parse_stack_text), its keys checked."""
    config = doc.get("config", {})
    if not isinstance(config, dict):
        raise StackFileError(name, "`config` must be a mapping of `inference-platform:<key>: value`")
    for key in config:
        if not _CONFIG_KEY.fullmatch(key):
            raise StackFileError(name, f"config key {key!r} is not of the form `<namespace>:<key>`")
    return config
