"""A YAML syntax error in a stack file is one line: the file, line:column, what was wrong and what is
allowed (platformctl/yaml_errors.py), for each mistake a hand edit commonly makes."""

from __future__ import annotations

import contextlib
import io

import pytest

from platformctl.__main__ import main
from platformctl.stackfile import StackFileError, parse_mapping, parse_stack_text

FILE = "stacks/Pulumi.acme-dev.yaml"
STACK = """\
config:
  inference-platform:customer: acme
  inference-platform:environment: dev
  inference-platform:cluster:
    mode: existing
    nodeGroups:
      - name: cpu
        selector: {pool: cpu}
        minNodes: 1
  inference-platform:services:
    - name: web
      hosts: [web.acme.example.com]
      versions:
        - name: v1
          image: nvcr.io/nvidia/tritonserver:25.01-py3
          modelRepository: {cache: s3, path: "web/v1"}
"""

# mistake -> (the edit, where the error is, what it says was wrong, what it says is allowed)
MISTAKES = {
    "tab indentation": (("    mode: existing", "\tmode: existing"), "5:1",
                        "a tab in the indentation of mode", "allowed: spaces (replace the tab)"),
    "tab after a colon": (("    mode: existing", "    mode:\texisting"), "5:10",
                          "a tab after mode:", "allowed: spaces"),
    "unquoted colon in a value": (("customer: acme", "customer: acme: prod"), "2:36",
                                  "a ': ' inside a value (the value of inference-platform:customer)",
                                  "quote a value that holds ': '"),
    "unclosed double quote": (("customer: acme", 'customer: "acme'), "2:32",
                              'the quoted value opened here with " is not closed on its line, so the value runs on to line 16',
                              'allowed: close it with " on the same line'),
    "unclosed single quote": (("customer: acme", "customer: 'acme"), "2:32",
                              "the quoted value opened here with ' is not closed on its line",
                              "allowed: close it with ' on the same line"),
    "unclosed quote at the end": (('path: "web/v1"}', 'path: "web/v1}'), "16:46",
                                  'the quoted value opened here with " is not closed on its line', "allowed: close it"),
    "unclosed list": (("[web.acme.example.com]", "[web.acme.example.com"), "12:14",
                      "the [ opened here is not closed with ]",
                      "allowed: [a, b] closed on the same line"),
    "unclosed mapping": (("{pool: cpu}", "{pool: cpu"), "8:19",
                         "the { opened here is not closed with }", "allowed: {a: 1, b: 2} closed on the same line"),
    "a value starting with @": (("customer: acme", "customer: @acme"), "2:32",
                                "a value starts with '@' (the value of inference-platform:customer), and '@' is reserved",
                                "allowed: quote a value that starts with it ('@...')"),
    "a value starting with a backtick": (("customer: acme", "customer: `acme`"), "2:32",
                                         "a value starts with '`'", "allowed: quote a value that starts with it"),
    "an alias without its anchor": (("customer: acme", "customer: *acme"), "2:32",
                                    "*acme is an alias, and no anchor &acme comes before it",
                                    "allowed: an anchor &acme defined above, or quote a value that starts with it ('*acme')"),
    "a key indented less than its siblings": (("    nodeGroups:", "   nodeGroups:"), "6:4",
                                              "the key nodeGroups is indented differently from the keys beside it",
                                              "allowed: the keys of one mapping at one indentation"),
    "a key indented under a value": (("        minNodes: 1", "        minNodes: 1\n          maxNodes: 2"), "10:19",
                                     "the key maxNodes is indented further than the key above it",
                                     "allowed: the keys of one mapping at one indentation"),
    "a list item among keys": (("    mode: existing", "    mode: existing\n    - cpu"), "6:5",
                               "a list item where a key of the mapping above was expected",
                               "allowed: list items under a key of their own"),
    "a list item without a space after its dash": (("      - name: cpu", "      -name: cpu"), "7:7",
                                                    "a list item without a space after its '-'",
                                                    "allowed: '- key: value' (a space after the dash)"),
    "a key without a space after its colon": (("  inference-platform:environment: dev", "  inference-platform:environment:dev"),
                                              "3:3", "a line that is not `key: value` (a key needs a space after its colon)",
                                              "allowed: `key: value` lines"),
    "text after a quoted value in braces": (('path: "web/v1"}', 'path: "web/v1" x}'), "16:55",
                                            "more text after a value in the {...}",
                                            "allowed: values separated by commas: {a: 1, b: 2}"),
    "text after a value": (("customer: acme", 'customer: "acme" prod'), "2:39",
                           "more text after a value on its line", "allowed: one value per key"),
    "an empty item between commas": (("{pool: cpu}", "{pool: cpu,, zone: a}"), "8:30",
                                     "an empty item between two commas", "allowed: one value between two commas"),
    "text after a block indicator": (("customer: acme", "customer: | acme"), "2:34",
                                     "text after '|' or '>' (the value of inference-platform:customer)",
                                     "allowed: the text on the next lines, indented"),
    "a duplicate key": (("  inference-platform:environment: dev", "  inference-platform:environment: dev\n  inference-platform:environment: prod"),
                        "4:3", "duplicate key 'inference-platform:environment' (first at line 3)", "each key may appear once"),
}


def refusal(text: str) -> str:
    with pytest.raises(StackFileError) as caught:
        parse_stack_text(text.encode(), FILE)
    return caught.value.one_line()


def test_the_base_stack_reads():
    assert parse_stack_text(STACK.encode(), FILE)["config"]["inference-platform:customer"] == "acme"


@pytest.mark.parametrize("mistake", MISTAKES)
def test_a_syntax_mistake_is_one_line_saying_where_what_and_what_is_allowed(mistake):
    (old, new), line_col, what, allowed = MISTAKES[mistake]
    assert STACK.count(old) == 1, old
    line = refusal(STACK.replace(old, new))
    assert "\n" not in line
    assert line.startswith(f"{FILE}:{line_col}: "), line
    assert what in line and allowed in line, line
    if mistake != "a duplicate key":
        assert line.startswith(f"{FILE}:{line_col}: YAML syntax error: ") and "; allowed: " in line, line


def test_an_unrecognised_syntax_error_keeps_the_parsers_words_and_says_what_is_allowed():
    line = refusal(STACK.replace("customer: acme", "customer: ? acme"))
    assert line == (f"{FILE}:2:32: YAML syntax error: mapping keys are not allowed here; "
                    "allowed: `key: value` lines and `- item` lists, indented with spaces")


def test_a_legitimate_multi_line_quoted_value_is_not_taken_for_an_unclosed_quote():
    text = STACK.replace("customer: acme", 'customer: "ac\n    me"').replace("    nodeGroups:", "   nodeGroups:")
    assert "indented differently" in refusal(text)
    assert parse_stack_text(STACK.replace("customer: acme", 'customer: "ac\n    me"').encode(), FILE)


def test_a_patch_file_gets_the_same_explanations():
    with pytest.raises(StackFileError) as caught:
        parse_mapping(b"set:\n\tweight: 50\n", "patch.yaml", "a patch")
    assert caught.value.one_line().startswith("patch.yaml:2:1: YAML syntax error: a tab in the indentation of weight")


def test_plan_prints_the_explained_line_and_exits_2(tmp_path):
    stack_file = tmp_path / "Pulumi.acme-dev.yaml"
    stack_file.write_text(STACK.replace("    mode: existing", "\tmode: existing"))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["plan", "acme-dev", "--stack-file", str(stack_file), "--out", str(tmp_path / "out")])
    assert code == 2 and err.getvalue().splitlines() == [
        f"{stack_file}:5:1: YAML syntax error: a tab in the indentation of mode, which YAML does not take for "
        "indenting or spacing; allowed: spaces (replace the tab) (YAML parser: while scanning for the next token "
        "found character '\\t' that cannot start any token)"]
    assert not (tmp_path / "out").exists()
