"""python -m platformctl plan STACK | policy STACK | policy-config STACK | diff A B | docs [--check] | bench"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.config import ConfigError

from . import docs
from .diff import diff_plans, format_diff, load_plan_json
from .engine import ROOT, render_stack, stack_path
from .gpu_report import gpu_report, stack_settings
from .invariants import PlanInvariantError, check_plan
from .plan import tree, write_plan


def _plan_json(arg: str) -> dict:
    """A stack name (rendered now) or a saved plan directory / resources.json."""
    path = Path(arg)
    if path.exists():
        return load_plan_json(path)
    return render_stack(arg).to_json()


def cmd_plan(args) -> int:
    stack_file = _stack_file(args)
    # Validated here first, so errors name the file actually read.
    settings = stack_settings(stack_file)
    plan = render_stack(args.stack, stack_file)
    out = write_plan(plan, Path(args.out or ROOT / "build" / args.stack))
    print(tree(plan))
    print(gpu_report(settings))
    print(check_plan(plan, settings))
    print(f"wrote {out / 'resources.json'} and {out / 'manifests'}")
    return 0


def cmd_diff(args) -> int:
    print(format_diff(diff_plans(_plan_json(args.a), _plan_json(args.b))))
    return 0


def cmd_docs(args) -> int:
    readme = ROOT / "README.md"
    text = readme.read_text()
    updated = docs.update_readme(text)
    if args.check:
        if updated != text:
            print("README.md configuration reference is out of date: run python -m platformctl docs", file=sys.stderr)
            return 1
        return 0
    readme.write_text(updated)
    return 0


def _stack_file(args) -> Path:
    stack_file = Path(args.stack_file) if args.stack_file else stack_path(args.stack)
    if not stack_file.exists():
        raise FileNotFoundError(f"no stack file {stack_file}")
    return stack_file


def _policy_inputs(args):
    """Settings from the stack file (or --stack-file), the plan rendered now or read from --plan."""
    from .policy import load_settings

    stack_file = _stack_file(args)
    settings = load_settings(stack_file)
    if getattr(args, "plan", None):
        return settings, load_plan_json(Path(args.plan))
    return settings, render_stack(args.stack, stack_file).to_json()


def cmd_policy(args) -> int:
    from .policy import exit_code, format_report, policy_config, run_policies

    settings, plan_json = _policy_inputs(args)
    violations = run_policies(plan_json, policy_config(settings))
    print(f"policy pack over stack {args.stack}:")
    print(format_report(violations))
    return exit_code(violations)


def cmd_policy_config(args) -> int:
    import json

    from .policy import load_settings, policy_config

    print(json.dumps(policy_config(load_settings(_stack_file(args))), indent=2, sort_keys=True))
    return 0


def cmd_bench(args) -> int:
    from .bench import main as bench

    return bench(args.sizes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="platformctl")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="render a stack offline into build/STACK")
    p.add_argument("stack")
    p.add_argument("--out", help="output directory (default build/STACK)")
    p.add_argument("--stack-file", help="stack file (default stacks/Pulumi.STACK.yaml)")
    p.set_defaults(func=cmd_plan)
    d = sub.add_parser("diff", help="compare two plans: stack names or saved plan directories")
    d.add_argument("a")
    d.add_argument("b")
    d.set_defaults(func=cmd_diff)
    r = sub.add_parser("docs", help="regenerate the README configuration reference")
    r.add_argument("--check", action="store_true", help="fail when the README is out of date")
    r.set_defaults(func=cmd_docs)
    pol = sub.add_parser("policy", help="run the policy pack over a stack's offline plan; exit 1 on a mandatory violation")
    pol.add_argument("stack")
    pol.add_argument("--plan", help="a saved plan directory or resources.json instead of rendering the stack now")
    pol.add_argument("--stack-file", help="stack file (default stacks/Pulumi.STACK.yaml)")
    pol.set_defaults(func=cmd_policy)
    pc = sub.add_parser("policy-config", help="print the policy-pack config of a stack (for --policy-pack-config)")
    pc.add_argument("stack")
    pc.add_argument("--stack-file", help="stack file (default stacks/Pulumi.STACK.yaml)")
    pc.set_defaults(func=cmd_policy_config)
    b = sub.add_parser("bench", help="plan synthetic stacks and report time and memory")
    b.add_argument("sizes", nargs="*", type=int, default=[10, 50, 200, 1000])
    b.set_defaults(func=cmd_bench)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as err:
        print(err.one_line(), file=sys.stderr)
        return 2
    except FileNotFoundError as err:
        print(err, file=sys.stderr)
        return 2
    except PlanInvariantError as err:
        print(err, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
