"""python -m platformctl plan STACK | policy STACK | policy-config STACK | exposure STACK | diff A B | docs [--check] | bench
| plan-example DIR | patch STACK_FILE PATCH_FILE [--check] | init CUSTOMER ENV | rehearse STACK

Bad input (stack file, stack name, plan file, patch file, output directory) prints one line (a
stack file with several problems: one complete line each) and exits 2; a file system error prints one line naming the path and exits 1. Neither
leaves anything half-written.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import settings_from_config

from . import args_codegen, docs
from .atomic import write_text
from .diff import NotAPlan, diff_plans, load_plan_json
from .diff import exit_code as diff_exit_code
from .diff_view import diff_json, format_diff
from .engine import (
    ROOT,
    render_config,
    render_program_stack,
    render_stack,
    shown_path,
    stack_config,
    stack_path,
    stack_settings,
)
from .errors import UsageError
from .gpu_report import gpu_report, plan_warnings
from .invariants import PlanInvariantError, check_plan, plan_resources
from .plan import MARKER, plan_dir_replaceable, tree, write_plan
from .plan_marker import CHANGED_FLAG, checked_stack_file, recorded_stack_file
from .stack_names import RULE, InvalidStackName, check_stack_name, known_stacks, shown
from .timeline import format_timelines, timelines

# The venv `make plan` builds, which the README's set-up leaves behind: user-facing commands run from it.
PLAN_PYTHON = ".venv-plan/bin/python"


def _existing_stack_file(path: Path) -> Path:
    if not path.is_file():
        stacks = known_stacks(ROOT / "stacks")
        listed = f"; stacks in stacks/: {', '.join(stacks)}" if stacks else "; stacks/ holds no stack file"
        raise UsageError(f"no stack file {shown_path(path)}{listed} (or give --stack-file FILE)")
    return path


def _plan_json(arg: str, allow_changed: bool = False, sources: list[str] | None = None) -> dict:
    """A saved plan directory / resources.json, or a stack name (rendered now); each one's
    source is appended to `sources` (a saved plan: the stack file its marker records)."""
    sources = [] if sources is None else sources
    path = Path(arg)
    if os.path.lexists(path):
        data = load_plan_json(path)
        recorded = checked_stack_file(path, allow_changed)
        at = recorded and recorded_stack_file(path).at
        sources.append(f"{arg}: saved plan of stack {data['stack']}"
                       + (f", rendered from {shown_path(recorded)}" if recorded else " (its stack file is not recorded)")
                       + (f" at {at}, with that commit's code" if at else ""))
        return data
    try:
        check_stack_name(arg)
    except InvalidStackName:
        raise NotAPlan(f"{shown(arg)} is neither a saved plan (no such file or directory) nor a stack name ({RULE})") from None
    stack_file = stack_path(arg)
    if not stack_file.is_file():
        raise NotAPlan(f"{shown(arg)} is neither a saved plan (no such file or directory) nor a stack (no stack file {shown_path(stack_file)})")
    sources.append(f"{arg}: stack rendered now from {shown_path(stack_file)}")
    return render_stack(arg, stack_file).to_json()


def cmd_plan(args) -> int:
    out = Path(args.out) if args.out else ROOT / "build" / args.stack
    if args.at:
        from .plan_at import plan_at

        if args.strict:
            return _fail("--strict does not apply with --at (that commit's code renders its plan); plan the branch with --strict", 2)
        return plan_at(args.stack, args.at, out, Path(args.stack_file) if args.stack_file else None)
    stack_file = _stack_file(args)
    plan_dir_replaceable(out)  # refuse now rather than after rendering
    settings, plan = _settings_and_plan(args.stack, stack_file)
    engine_report = check_plan(plan, settings)  # await budgets and ordering: refused before anything is written
    try:
        write_plan(plan, out, stack_file)
    except OSError as err:
        return _fail(f"cannot write the plan to {out}: {os_error_line(err)}", 1)
    print(tree(plan))
    print(gpu_report(settings))
    print(engine_report)
    if settings.gpu_groups:
        print(format_timelines(timelines(plan_resources(plan), settings)))
    print(f"wrote {out / 'resources.json'} and {out / 'manifests'}")
    warnings = plan_warnings(settings)
    if args.strict and warnings:
        return _fail(f"--strict: the plan has {len(warnings)} warning{'s' if len(warnings) > 1 else ''} (the `warning:` "
                     "lines above); exit 1", 1)
    return 0


def cmd_plan_example(args) -> int:
    """Render a program of examples/ (or any Pulumi program using the components) offline, like
    `plan`: manifests to --out, the component tree, what `pulumi up` waits for, the policy run."""
    from .awaits import format_program_waits
    from .ordering import violations
    from .policy import format_report, run_policies

    program_dir = Path(args.dir)
    stack_file = _existing_stack_file(Path(args.stack_file) if args.stack_file else program_dir / "Pulumi.example.yaml")
    out = Path(args.out) if args.out else ROOT / "build" / f"example-{program_dir.resolve().name}"
    plan_dir_replaceable(out)  # refuse now rather than after rendering
    references = {}
    for reference in args.reference:
        name, sep, stack = reference.partition("=")
        if not (sep and name):
            raise UsageError(f"--reference {shown(reference)}: expected NAME=STACK, e.g. organization/inference-platform/demo-dev=demo-dev")
        references[name] = render_stack(stack).outputs
    plan = render_program_stack(program_dir, stack_file, references)
    plan_json = plan.to_json()
    found = violations(plan_json["resources"])
    if found:
        raise PlanInvariantError(found)
    try:
        write_plan(plan, out)
    except OSError as err:
        return _fail(f"cannot write the plan to {out}: {os_error_line(err)}", 1)
    print(tree(plan))
    print(format_program_waits(plan_json["resources"]))
    # The pack's default enforcement levels, no stack facts: a stack-wide policy may flag what the
    # program leaves to the cluster or another stack (a namespace, mesh-wide mTLS); shown, not fatal.
    print(f"policy pack over program {program_dir.resolve().name} (default enforcement; findings outside the program are expected):")
    print(format_report(run_policies(plan_json, {})))
    print(f"wrote {out / 'resources.json'} and {out / 'manifests'}")
    return 0


def cmd_diff(args) -> int:
    # Exit 1 when the change would replace or delete a protected or retainOnDelete resource.
    sources: list[str] = []
    d = diff_plans(_plan_json(args.a, args.allow_changed_stack_file, sources),
                   _plan_json(args.b, args.allow_changed_stack_file, sources))
    if args.output == "json":
        print(json.dumps(diff_json(d, sources), indent=2, sort_keys=True))
    else:
        print("\n".join(f"{label} {s}" for label, s in zip(("old", "new"), sources, strict=True)))
        print(format_diff(d, urns=args.urns))
    return diff_exit_code(d)


def cmd_docs(args) -> int:
    """The documentation's generated parts and components/args.py, from the settings and input models."""
    wanted = {ROOT / page: docs.update_page(page, (ROOT / page).read_text()) for page in docs.GENERATED_PAGES}
    wanted[args_codegen.ARGS_FILE] = args_codegen.generate()
    if args.check:
        stale = [str(path.relative_to(ROOT)) for path, text in wanted.items() if path.read_text() != text]
        if stale:
            print(f"{', '.join(stale)} out of date: run python -m platformctl docs", file=sys.stderr)
            return 1
        return 0
    for path, text in wanted.items():
        write_text(path, text)
    return 0


def cmd_exposure(args) -> int:
    """Who may reach what from outside: per host and probed path, each credential kind's answer."""
    from .exposure import stack_exposure, table

    print(table(stack_exposure(args.stack, _stack_file(args))), end="")
    return 0


def _stack_file(args) -> Path:
    return _existing_stack_file(Path(args.stack_file) if args.stack_file else stack_path(args.stack))


def _settings_and_plan(stack: str, stack_file: Path):
    """The stack file read once: its settings, validated first so errors name the file
    actually read, then the plan rendered from the same config."""
    config, secret_keys = stack_config(stack_file)
    settings = settings_from_config(config, secret_keys, shown_path(stack_file), stack)
    return settings, render_config(stack, config, secret_keys, shown_path(stack_file))


def _policy_inputs(args):
    """Settings, the plan and the stack file they come from: the plan rendered now from the stack
    file (or --stack-file), or read from --plan with the stack file its marker records."""
    if getattr(args, "plan", None):
        plan_path = Path(args.plan)
        plan_json = load_plan_json(plan_path)
        recorded = None if args.stack_file else checked_stack_file(plan_path, args.allow_changed_stack_file)
        stack_file = recorded or _stack_file(args)
        how = "recorded in the plan" if recorded else "given by --stack-file" if args.stack_file else "not recorded in the plan; by stack name"
        return stack_settings(stack_file), plan_json, f"{shown_path(stack_file)} ({how})"
    stack_file = _stack_file(args)
    settings, plan = _settings_and_plan(args.stack, stack_file)
    return settings, plan.to_json(), shown_path(stack_file)


def cmd_policy(args) -> int:
    from .policy import exit_code, format_report, policy_config, run_policies

    settings, plan_json, source = _policy_inputs(args)
    violations = run_policies(plan_json, policy_config(settings))
    print(f"policy pack over stack {args.stack}, stack file {source}:")
    print(format_report(violations))
    code = exit_code(violations)
    if args.strict and code == 0 and violations:
        return _fail(f"--strict: {len(violations)} advisory violation{'s' if len(violations) > 1 else ''} (above); exit 1", 1)
    return code


def cmd_policy_config(args) -> int:
    import json

    from .policy import policy_config

    print(json.dumps(policy_config(stack_settings(_stack_file(args))), indent=2, sort_keys=True))
    return 0


def cmd_patch(args) -> int:
    """Add the canary version of a pipeline's patch to a stack file; print the unified diff."""
    from .patch import patch_stack_file

    stack_file = _existing_stack_file(Path(args.stack_file))
    patch_file = Path(args.patch_file)
    print(patch_stack_file(stack_file, shown_path(stack_file), patch_file, shown_path(patch_file), args.check), end="")
    return 0


def cmd_init(args) -> int:
    from .init import checked_names, init_stack

    checked_names(args.customer, args.environment)  # before the stack name they make is checked
    stack = f"{args.customer}-{args.environment}"
    stack_file = Path(args.stack_file) if args.stack_file else stack_path(stack)
    to_fill = init_stack(stack_file, args.customer, args.environment, args.cluster, args.gpu_group, args.cache, stack)
    how = (f"{PLAN_PYTHON} -m platformctl plan {stack} --stack-file {shown_path(stack_file)}" if args.stack_file
           else f"make plan STACK={stack}")
    fill = (f"; replace its {len(to_fill)} REPLACE-ME value{'s' if len(to_fill) > 1 else ''} ({', '.join(to_fill)}), "
            "which the plan refuses until then" if to_fill else "")
    print(f"wrote {shown_path(stack_file)}{fill}; plan it with: {how}")
    return 0


def cmd_rehearse(args) -> int:
    from .cloud_refresh import CLUSTER_STATUSES
    from .rehearse import format_rehearsal, rehearse

    if args.cluster_status not in CLUSTER_STATUSES:
        raise UsageError(f"--cluster-status {shown(args.cluster_status)}: not a Magnum cluster status; allowed: "
                         f"{', '.join(CLUSTER_STATUSES)}")
    counts = {}
    for option, items in (("--live-nodes", args.live_nodes), ("--resized", args.resized)):
        counts[option] = {}
        for item in items:
            group, sep, count = item.partition("=")
            if not (sep and group and count.isdigit()):
                raise UsageError(f"{option} {shown(item)}: expected GROUP=COUNT, e.g. gpu-h100=3")
            counts[option][group] = int(count)
    edited = Path(args.edited_file) if args.edited_file else None
    result = rehearse(args.stack, _stack_file(args), edited, counts["--live-nodes"], args.cluster_status,
                      counts["--resized"])
    print(format_rehearsal(result))
    return result.exit_code()


def cmd_bench(args) -> int:
    from .bench import main as bench

    return bench(args.sizes)


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand and flag of platformctl (the CI example's commands are checked against it)."""
    from .init import CACHES, CLUSTER_MODES

    parser = argparse.ArgumentParser(prog="platformctl")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="render a stack offline into build/STACK")
    p.add_argument("stack")
    p.add_argument("--out", help=f"output directory (default build/STACK); replaced only if absent, empty or a plan ({MARKER})")
    p.add_argument("--stack-file", help="stack file (default stacks/Pulumi.STACK.yaml)")
    p.add_argument("--at", metavar="REV", help="plan the stack as it was at commit REV (a branch, tag or sha), with that "
                                              "commit's code and stack file: the old side of a day-2 diff")
    p.add_argument("--strict", action="store_true", help="exit 1 when the plan has warnings (`warning:` lines: a GPU "
                                                          "group that cannot hold its services at max replicas); the plan is still written")
    p.set_defaults(func=cmd_plan)
    e = sub.add_parser("plan-example", help="render a program that uses the components (examples/DIR) offline")
    e.add_argument("dir")
    e.add_argument("--stack-file", help="the program's stack file (default DIR/Pulumi.example.yaml)")
    e.add_argument("--out", help=f"output directory (default build/example-DIR); replaced only if absent, empty or a plan ({MARKER})")
    e.add_argument("--reference", action="append", default=[], metavar="NAME=STACK",
                   help="a StackReference NAME reads the outputs of platform stack STACK (rendered now)")
    e.set_defaults(func=cmd_plan_example)
    d = sub.add_parser("diff", help="compare two plans: stack names or saved plan directories")
    d.add_argument("a")
    d.add_argument("b")
    d.add_argument("--urns", action="store_true", help="name resources by full URN (default: type and logical name)")
    d.add_argument("--output", choices=("text", "json"), default="text", help="json: the stable shape of docs/diff.md, for CI")
    d.add_argument(CHANGED_FLAG, action="store_true", help="read a saved plan whose recorded stack file changed since")
    d.set_defaults(func=cmd_diff)
    r = sub.add_parser("docs", help="regenerate the configuration reference, OS support, hardening and exposure tables in docs/, and components/args.py")
    r.add_argument("--check", action="store_true", help="fail when a generated part is out of date")
    r.set_defaults(func=cmd_docs)
    pol = sub.add_parser("policy", help="run the policy pack over a stack's offline plan; exit 1 on a mandatory violation")
    pol.add_argument("stack")
    pol.add_argument("--plan", help="a saved plan directory or resources.json instead of rendering the stack now")
    pol.add_argument("--stack-file", help="stack file (default stacks/Pulumi.STACK.yaml; with --plan, the one the plan records)")
    pol.add_argument(CHANGED_FLAG, action="store_true", help="with --plan: use the recorded stack file even if it changed since")
    pol.add_argument("--strict", action="store_true", help="exit 1 on advisory violations too")
    pol.set_defaults(func=cmd_policy)
    ex = sub.add_parser("exposure", help="print who may reach what from outside: per host and path, the answer to no, a wrong, a valid credential and a valid one over plain HTTP")
    ex.add_argument("stack")
    ex.add_argument("--stack-file", help="stack file (default stacks/Pulumi.STACK.yaml)")
    ex.set_defaults(func=cmd_exposure)
    pc = sub.add_parser("policy-config", help="print the policy-pack config of a stack (for --policy-pack-config)")
    pc.add_argument("stack")
    pc.add_argument("--stack-file", help="stack file (default stacks/Pulumi.STACK.yaml)")
    pc.set_defaults(func=cmd_policy_config)
    pa = sub.add_parser("patch", help="add the canary version of a model pipeline's patch to a stack file")
    pa.add_argument("stack_file")
    pa.add_argument("patch_file")
    pa.add_argument("--check", action="store_true", help="print the diff, write nothing")
    pa.set_defaults(func=cmd_patch)
    i = sub.add_parser("init", help="write a new commented stack file stacks/Pulumi.CUSTOMER-ENV.yaml that plans at once")
    i.add_argument("customer")
    i.add_argument("environment")
    i.add_argument("--cluster", choices=CLUSTER_MODES, default="existing",
                   help="existing: a cluster you reach with a kubeconfig; magnum: one this stack creates (default existing)")
    i.add_argument("--gpu-group", action="append", default=[], metavar="NAME=MODEL",
                   help="a GPU node group and its GPU model, e.g. a100=A100-80GB (repeatable; a cpu group is always written)")
    i.add_argument("--cache", choices=CACHES, default="fileShare",
                   help="where model weights are read from: an NFS file share or an S3 bucket (default fileShare)")
    i.add_argument("--stack-file", help="write here instead of stacks/Pulumi.CUSTOMER-ENV.yaml")
    i.set_defaults(func=cmd_init)
    rh = sub.add_parser(
        "rehearse", help="play a stack's life offline (create, refresh, everyday edit, Kubernetes upgrade); "
                         "exit 1 if a stateful resource would be replaced or deleted, or Magnum would refuse an up",
        description="Play a stack's life offline and print, per step, what `pulumi up` would do: 1 create (from "
                    "nothing); 2 refresh (the values the cloud hands back: Magnum's cluster labels merged from the "
                    "template, node counts the autoscaler moved), then up with no edit; 3 an everyday edit (a new "
                    "version of the first service taking 10% of its heaviest version's traffic, as `platformctl "
                    "patch` adds it, or --edited-file); 4 the next Kubernetes minor version in the stack file; "
                    "5 refresh and up again. A step the settings or Magnum refuse (an upgrade of a cluster not in a "
                    "*_COMPLETE status, see --cluster-status) applies nothing and is reported. "
                    "Exit 1 when a step would replace or delete the Magnum cluster, a node group, the file share, "
                    "the S3 bucket, a persistent volume or claim or a protected resource, when the diff reports an "
                    "error, or when Magnum or its provider would fail the up (an upgrade longer than the cluster's "
                    "update wait, a node group delete: terraform-provider-openstack#2066; a node group create that the provider "
                    "may fail the same way is a note); exit 2 on a bad stack file. Nothing is written.")
    rh.add_argument("stack")
    rh.add_argument("--stack-file", help="stack file (default stacks/Pulumi.STACK.yaml)")
    rh.add_argument("--edited-file", help="the everyday edit: this stack file instead of the built-in canary version")
    rh.add_argument("--live-nodes", action="append", default=[], metavar="GROUP=COUNT",
                    help="the node count the autoscaler left a Magnum node group at (default: its minNodes; repeatable)")
    rh.add_argument("--resized", action="append", default=[], metavar="GROUP=COUNT",
                    help="`openstack coe cluster resize <cluster> COUNT --nodegroup GROUP` run before the edit (step 3): "
                         "the count stays on Heat and magnum-capi-helm; on magnum-cluster-api the driver's monitor sets "
                         "it back to the autoscaler's (--live-nodes) at its next poll (repeatable)")
    rh.add_argument("--cluster-status", default="CREATE_COMPLETE", metavar="STATUS",
                    help="the Magnum cluster's status before the edits, e.g. UPDATE_FAILED after a node group change "
                         "that failed (default: CREATE_COMPLETE); Magnum upgrades only a cluster in a *_COMPLETE status")
    rh.set_defaults(func=cmd_rehearse)
    b = sub.add_parser("bench", help="plan synthetic stacks and report time and memory")
    b.add_argument("sizes", nargs="*", type=int, default=[10, 50, 200, 1000])
    b.set_defaults(func=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "stack", None) is not None:
            check_stack_name(args.stack)
        return args.func(args)
    except ConfigError as err:
        # One complete line per problem: file, key path, what is wrong.
        return _fail("\n".join(err.lines()), 2, lines=True)
    except UsageError as err:
        return _fail(str(err), 2)
    except PlanInvariantError as err:
        return _fail(str(err), 2)
    except OSError as err:
        return _fail(os_error_line(err), 1)
    except KeyboardInterrupt:
        return 130


def os_error_line(err: OSError) -> str:
    paths = " -> ".join(str(p) for p in (err.filename, err.filename2) if p is not None)
    reason = err.strerror or str(err)
    return f"{paths}: {reason}" if paths else reason


def _fail(message: str, code: int, lines: bool = False) -> int:
    # One line, whatever the message echoes (file names and stack names may hold newlines);
    # `lines`: several lines, each already escaped by its maker (ConfigError.lines).
    for line in message.split("\n") if lines else [message]:
        print(line.replace("\r", "\\r").replace("\n", "\\n"), file=sys.stderr)
    return code


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)  # unwinds, so a plan being written removes its temporary copy


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is written and closed by now; the interpreter's teardown can race the mock
    # runtime's gRPC threads (an abort, "epoll_wait error: Bad file descriptor", turns exit 1
    # into a signal), so the process leaves without it.
    os._exit(int(code or 0))
