"""What a YAML syntax error in a stack file (or a patch) means, in one line: where, what was wrong
and what is allowed, instead of the parser's own words alone.

PyYAML says what its scanner or parser expected (lib/yaml/scanner.py, lib/yaml/parser.py: "mapping
values are not allowed here", "expected <block end>, but found '<scalar>'", ...). Each of those
has a few usual causes in a hand-edited file; this module names the likely one from the parser's
problem and the line it points at. An unclosed quote is found from the scanner's tokens: the parser
complains only where the runaway quoted value ends, often many lines later, so the error points at
the opening quote instead. What the parser said stays at the end, in parentheses.
"""

from __future__ import annotations

import re
from typing import Optional

import yaml

# A key written on a line: what comes before the first `: ` (or a colon ending the line), after any
# list dash; a colon followed by a non-space belongs to the key (`inference-platform:customer`).
_LINE_KEY = re.compile(r"\s*(?:-\s+)*((?:[^\s:#'\"]|:(?=\S))(?:[^:#]|:(?=\S))*?)\s*:(?:\s|$)")
_QUOTE = "quote a value that starts with it"
# Indicators that cannot start a plain value (YAML 1.2 c-indicator; PyYAML scanner.fetch_more_tokens
# finds no token for them there and says the character "cannot start any token").
_RESERVED = {"@": "'@' is reserved", "`": "'`' is reserved", "%": "'%' starts a directive"}


def _line(text: str, mark: yaml.Mark) -> str:
    lines = text.splitlines()
    return lines[mark.line] if mark.line < len(lines) else ""


def _key_on(line: str) -> Optional[str]:
    found = _LINE_KEY.match(line)
    return found.group(1) if found else None


def _of(line: str) -> str:
    key = _key_on(line)
    return f" (the value of {key})" if key else ""


def _runaway_quote(text: str, before: yaml.Mark) -> Optional[yaml.Mark]:
    """The opening mark of a quoted value that runs past its own line, its quote never closed there,
    and ends on the line where the parser then failed (`before`): an unclosed quote, most likely
    (the quote that ends it is the opening one of a later value)."""
    found = None
    try:
        # The scanner's tokens do not depend on how scalars resolve: PyYAML's own loader will do.
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if token.start_mark.index >= before.index:
                break
            if (isinstance(token, yaml.ScalarToken) and token.style in ("'", '"')
                    and token.start_mark.line < token.end_mark.line == before.line):
                opening = _line(text, token.start_mark)[token.start_mark.column:]
                if opening.count(token.style) == 1:
                    found = token.start_mark
    except yaml.YAMLError:
        pass
    return found


def _unclosed_quote(text: str, opened: yaml.Mark, ran_to: Optional[int]) -> tuple[str, str, yaml.Mark]:
    quote = _line(text, opened)[opened.column:opened.column + 1] or '"'
    runs = f", so the value runs on to line {ran_to}" if ran_to and ran_to > opened.line + 1 else ""
    return (f"the quoted value opened here with {quote} is not closed on its line{runs}{_of(_line(text, opened))}",
            f"close it with {quote} on the same line", opened)


def explain(err: yaml.MarkedYAMLError, text: str) -> tuple[str, str, Optional[yaml.Mark]]:
    """(what was wrong, what is allowed, where) for a PyYAML syntax error in `text`."""
    problem, context = err.problem or "", err.context or ""
    mark = err.problem_mark or err.context_mark
    line = _line(text, mark) if mark else ""
    if "quoted scalar" in context and "end of stream" in problem and err.context_mark:
        return _unclosed_quote(text, err.context_mark, None)
    if "cannot start any token" in problem:
        char = line[mark.column:mark.column + 1] if mark else ""
        if char == "\t":
            key = _key_on(line)
            where = (f" in the indentation of {key}" if not line[:mark.column].strip() else f" after {key}:") if key else ""
            return f"a tab{where}, which YAML does not take for indenting or spacing", "spaces (replace the tab)", mark
        reason = _RESERVED.get(char, f"{char!r} cannot start a plain value")
        return f"a value starts with {char!r}{_of(line)}, and {reason}", f"{_QUOTE} ('{char}...')", mark
    if problem.startswith("found undefined alias"):
        name = problem.split("'")[1] if "'" in problem else ""
        return (f"*{name} is an alias, and no anchor &{name} comes before it{_of(line)}",
                f"an anchor &{name} defined above, or {_QUOTE} ('*{name}')", mark)
    if mark and (opened := _runaway_quote(text, mark)) is not None:
        return _unclosed_quote(text, opened, mark.line + 1)
    if problem == "mapping values are not allowed here":
        # `-name: x` is a key "-name", so the parser stumbles at the line after it at the latest.
        lines = text.splitlines()
        for at in (mark.line, mark.line - 1):
            if 0 <= at < len(lines) and re.match(r"\s*-[^\s-]", lines[at]):
                dash = len(lines[at]) - len(lines[at].lstrip())
                return ("a list item without a space after its '-'", "'- key: value' (a space after the dash)",
                        yaml.Mark(mark.name, mark.index, at, dash, None, None))
        key = _key_on(line)
        if key and mark.column == line.index(key) + len(key):
            # The line's own key: it is indented under a key that already has a value on its line,
            # so YAML reads it as more of that value.
            return (f"the key {key} is indented further than the key above it, which has its value on its line",
                    "the keys of one mapping at one indentation; a nested mapping under a key with nothing "
                    "after its colon", mark)
        return (f"a ': ' inside a value{_of(line)}, which YAML reads as a second key on the line",
                "one `key: value` per line; quote a value that holds ': ' (\"a: b\")", mark)
    if problem == "could not find expected ':'":
        # The scanner took the line for a key and looked on for its colon: the line is where it began.
        return ("a line that is not `key: value` (a key needs a space after its colon) nor a list item",
                "`key: value` lines, `- item` in a list", err.context_mark or mark)
    if context == "while parsing a flow node" and problem.endswith("but found ','"):
        return "an empty item between two commas", "one value between two commas: [a, b], {a: 1, b: 2}", mark
    if "flow sequence" in context or "flow mapping" in context:
        opener, closer, shape = ("[", "]", "[a, b]") if "sequence" in context else ("{", "}", "{a: 1, b: 2}")
        if problem.endswith("but got '<scalar>'"):
            return (f"more text after a value in the {opener}...{closer}", f"values separated by commas: {shape}; "
                    "quote a value with spaces and quotes in it as a whole", mark)
        at = err.context_mark or mark
        return (f"the {opener} opened here is not closed with {closer} before the next key, or holds "
                f"a ': ' unquoted{_of(_line(text, at))}",
                f"{shape} closed on the same line, a value with ': ' in it quoted", at)
    if "block scalar" in context:
        return (f"text after '|' or '>'{_of(line)}, which start a block of text on the lines below",
                f"the text on the next lines, indented; or {_QUOTE}", mark)
    if "expected <block end>" in problem:
        found = problem.rsplit("but found ", 1)[-1].strip("'")
        if found in ("<block mapping start>", "<block sequence start>", "-") and line.lstrip().startswith("-"):
            return ("a list item where a key of the mapping above was expected",
                    "list items under a key of their own, each '- ' at one indentation", mark)
        if found == "<block mapping start>":
            key = _key_on(line)
            return (f"{f'the key {key}' if key else 'a key'} is indented differently from the keys beside it",
                    "the keys of one mapping at one indentation; a nested mapping indented further under its key",
                    mark)
        if found == "<scalar>":
            return ("more text after a value on its line", "one value per key; quote a value with spaces and "
                    "quotes in it as a whole", mark)
    said = " ".join(p for p in (context, problem) if p)
    return (said or "not YAML", "`key: value` lines and `- item` lists, indented with spaces", mark)


def syntax_message(err: yaml.MarkedYAMLError, text: str) -> tuple[str, Optional[yaml.Mark]]:
    """The one-line message (without its `file:line:col:`) and the mark it belongs at."""
    what, allowed, mark = explain(err, text)
    said = " ".join(p for p in (err.context, err.problem) if p)
    parser = f" (YAML parser: {said})" if said and said != what else ""
    return f"YAML syntax error: {what}; allowed: {allowed}{parser}", mark
