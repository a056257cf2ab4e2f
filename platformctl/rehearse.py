"""`platformctl rehearse STACK`: play a stack's life offline and say what `pulumi up` would do at each
step, with the values the cloud hands back on refresh (cloud_refresh.py):

1. create: the first `up`, from nothing;
2. refresh: `pulumi refresh`, then `up` with no edit (Magnum's labels, the autoscaler's counts);
3. edit: an everyday edit: a new model version taking a canary share of its base's traffic (the
   StackPatch of `platformctl patch`), or the stack file given with --edited-file;
4. upgrade: the next Kubernetes minor version in the stack file (the template image named after it);
5. after upgrade: refresh, then `up` with no edit (what the cloud reports after the upgrade).

Each step diffs the state as it would then be against the stack's plan with the existing diff
(diff.py). A step the settings refuse, or that Magnum or its provider would fail during the `up`
(cloud_refresh.py: a cluster upgrade longer than the provider's wait, a node group delete the
provider fails while Magnum deletes in the background, bounds outside a live count that
magnum-cluster-api's monitor set back after a resize among them), is reported as refused and
applies nothing; a step that creates a Magnum node group notes that the provider may fail
that create while Magnum goes on (cloud_refresh.py). The rehearsal fails (exit 1) when a step would replace or delete a
stateful resource (Magnum cluster and node groups, Manila share, S3 bucket, persistent volumes and
claims, anything protected), when the diff reports an error, or when a step is refused (by the
settings, Pulumi's preview or Magnum).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from inference_platform.settings.base import NAMESPACE
from inference_platform.settings.errors import ConfigError
from inference_platform.settings.loader import settings_from_config
from inference_platform.settings.stack import Settings

from .cloud_refresh import MAGNUM_CLUSTER, MAGNUM_NODE_GROUP, Cloud
from .diff import diff_plans
from .diff_view import format_diff, summary
from .engine import checked_engine_config, render_config, shown_path
from .errors import UsageError
from .patch import AddVersion, apply_patch
from .propertypath import parse, reset
from .stackfile import parse_stack_text, stack_config_of

STATEFUL_TYPES = (
    MAGNUM_CLUSTER, MAGNUM_NODE_GROUP, "openstack:sharedfilesystem/share:Share", "pulumi-python:dynamic/s3:Bucket",
    "kubernetes:core/v1:PersistentVolumeClaim", "kubernetes:core/v1:PersistentVolume",
)
CANARY_WEIGHT = 10
_VERSION = re.compile(r"^v1\.([0-9]+)\.[0-9]+")


@dataclass
class Step:
    name: str
    what: str
    diff: Optional[dict[str, Any]] = None
    refused: list[str] = field(default_factory=list)
    # "" (went through), "settings" (before anything), "Pulumi" (the preview's errors, such as a
    # protected resource to replace: nothing applied) or "Magnum" (during the `up`)
    refused_by: str = ""
    notes: list[str] = field(default_factory=list)  # diff notes about the step's own edit

    @property
    def stateful(self) -> list[str]:
        """`replace TYPE NAME (reason)` / `delete TYPE NAME` of each stateful resource the step would lose."""
        if self.diff is None or self.refused_by == "Pulumi":
            return []  # refused before anything is applied: nothing is lost
        out = []
        for c in self.diff["changes"]:
            old = self.diff["old"].get(c.key) or {}
            if c.action in ("replace", "delete") and (c.type in STATEFUL_TYPES or old.get("protect")):
                name = (self.diff["new"].get(c.key) or old).get("name", c.key)
                out.append(f"{c.action} {c.type} {name}" + (f" ({c.reason})" if c.reason else ""))
        return out

    @property
    def failed(self) -> bool:
        # a refused step fails whoever refuses it: what was rehearsed cannot be applied as written
        return bool(self.stateful or (self.diff and self.diff["errors"]) or self.refused_by)


@dataclass
class Rehearsal:
    stack: str
    steps: list[Step]

    def exit_code(self) -> int:
        return 1 if any(s.failed for s in self.steps) else 0


def _config_of(data: bytes, shown: str) -> dict[str, Any]:
    return stack_config_of(parse_stack_text(data, shown), shown)


def _render(stack: str, raw: dict[str, Any], shown: str) -> tuple[Settings, dict[str, Any]]:
    config, secret_keys = checked_engine_config(raw, shown)
    settings = settings_from_config(config, secret_keys, shown)
    return settings, render_config(stack, config, secret_keys, shown).to_json()


def _section(raw: dict[str, Any], key: str) -> Optional[str]:
    return next((k for k in (f"{NAMESPACE}:{key}", key) if k in raw), None)


def canary_edit(data: bytes, settings: Settings, shown: str) -> tuple[Optional[bytes], str]:
    """The stack file with a new version of the first service taking a canary share from its
    heaviest version (as `platformctl patch` adds it), and what it does; None without services."""
    if not settings.services:
        return None, "no edit: the stack has no services"
    service = settings.services[0]
    base = max(service.versions, key=lambda v: v.weight)
    name = f"{base.name[:15]}-next"
    weight = min(CANARY_WEIGHT, base.weight)
    patch = AddVersion(service.name, base.name, {"name": name, "weight": weight})
    return (apply_patch(data, patch, shown).encode(),
            f"new version {name} of service {service.name}, {weight}% of traffic shifted from {base.name}")


def upgrade_edit(raw: dict[str, Any], settings: Settings) -> tuple[Optional[dict[str, Any]], str]:
    """The config with the next Kubernetes minor version (and the template image named after it)."""
    if settings.cluster.mode != "magnum":
        return None, "no upgrade: the cluster is not one this stack creates"
    old = settings.cluster.magnum.kubernetes_version
    match = _VERSION.match(old)
    new = f"v1.{int(match.group(1)) + 1}.0{old[match.end():]}"
    out = copy.deepcopy(raw)
    magnum = out[_section(out, "cluster")].setdefault("magnum", {})
    magnum["kubernetesVersion"] = new
    template = magnum.get("template") or {}
    if isinstance(template.get("image"), str) and old in template["image"]:
        template["image"] = template["image"].replace(old, new)
    return out, f"Kubernetes {old} -> {new} (kubernetesVersion and the template image)"


def _applied(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The state after an `up`: the new plan, with inputs under ignoreChanges kept from the old state."""
    olds = {r["urn"]: r for r in old["resources"]}
    out = copy.deepcopy(new)
    for r in out["resources"]:
        before = olds.get(r["urn"])
        for text in r.get("ignoreChanges") or ():
            if before is not None:
                r["inputs"] = reset(before.get("inputs") or {}, r.get("inputs") or {}, parse(text))
    return out


class _Play:
    def __init__(self, stack: str, shown: str, cloud: Cloud, plan: dict[str, Any]):
        self.stack, self.shown, self.cloud = stack, shown, cloud
        self.state: dict[str, Any] = {"stack": stack, "resources": []}
        self.plan = plan  # the plan of the stack file as it stands
        self.steps: list[Step] = []

    def up(self, name: str, what: str, new_plan: dict[str, Any], refresh: bool) -> Step:
        old = self.cloud.refreshed(self.state) if refresh else self.state
        d = diff_plans(old, new_plan)
        # from nothing, every note is the step's own (a node group's create race among them)
        mine = set(diff_plans(self.plan, new_plan)["notes"]) if self.state["resources"] else set(d["notes"])
        step = Step(name, what, d, notes=[n for n in d["notes"] if n in mine])
        step.notes += self.cloud.upgrade_notes(old, new_plan, d["changes"])
        step.refused = self.cloud.refusals(old, new_plan, d["changes"])
        if d["errors"]:
            step.refused, step.refused_by = [str(e) for e in d["errors"]], "Pulumi"
        elif step.refused:
            step.refused_by = "Magnum"
        else:
            if not self.state["resources"]:
                self.cloud.created(new_plan)
            else:
                self.cloud.applied(old, new_plan, d["changes"])
            self.state, self.plan = _applied(old, new_plan), new_plan
        self.steps.append(step)
        return step

    def refused(self, name: str, what: str, err: ConfigError) -> None:
        self.steps.append(Step(name, what, refused=err.lines(), refused_by="settings"))


def default_live_nodes(settings: Settings) -> dict[str, int]:
    """Where the autoscaler left each group, unless --live-nodes says: scaled in to its minimum."""
    return {g.name: g.min_nodes for g in settings.cluster.node_groups} if settings.cluster.mode == "magnum" else {}


def _group_counts(option: str, counts: Optional[dict[str, int]], groups: dict[str, int], shown: str) -> dict[str, int]:
    for group, count in (counts or {}).items():
        if group not in groups:
            raise UsageError(f"{option} {group}={count}: no Magnum node group {group!r} in {shown}; "
                             f"allowed: {', '.join(groups) or 'none (not a Magnum cluster)'}")
    return dict(counts or {})


def rehearse(stack: str, stack_file: Path, edited_file: Optional[Path] = None,
             live_nodes: Optional[dict[str, int]] = None, cluster_status: str = "CREATE_COMPLETE",
             resized: Optional[dict[str, int]] = None) -> Rehearsal:
    """Play the stack's life; ConfigError when the stack file itself does not plan. `resized`: the
    node count `openstack coe cluster resize` gave a group before the edit."""
    shown = shown_path(stack_file)
    data = _read(stack_file, shown)
    raw = _config_of(data, shown)
    settings, plan = _render(stack, raw, shown)
    live = default_live_nodes(settings)
    live.update(_group_counts("--live-nodes", live_nodes, live, shown))
    resized = _group_counts("--resized", resized, live, shown)
    for group in settings.cluster.node_groups if resized else ():
        # magnum api/controllers/v1/cluster_actions.py _resize: NGResizeOutBounds outside the group's bounds.
        if group.name in resized and not group.min_nodes <= resized[group.name] <= group.max_nodes:
            raise UsageError(f"--resized {group.name}={resized[group.name]}: Magnum refuses a resize outside the group's "
                             f"bounds in {shown} (NGResizeOutBounds); allowed: {group.min_nodes} to {group.max_nodes}")
    play = _Play(stack, shown, Cloud(settings, live, status=cluster_status), plan)
    play.up("create", "the first `pulumi up`, from nothing", plan, refresh=False)
    play.up("refresh", "`pulumi refresh`, then `pulumi up` with no edit", plan, refresh=True)
    play.cloud.resize(resized)

    edited_shown = shown_path(edited_file) if edited_file is not None else shown
    what = f"the stack file as edited in {edited_shown}" if edited_file is not None else "a canary version"
    if resized:
        what += ", after `openstack coe cluster resize` of " + ", ".join(f"{g} to {n}" for g, n in resized.items())
    try:
        if edited_file is not None:
            edited = _read(edited_file, edited_shown)
        else:
            edited, what = canary_edit(data, settings, shown)
    except ConfigError as err:  # the patch cannot be applied to this stack file
        edited = None
        play.refused("edit", what, err)
    if edited is not None:
        try:
            edited_raw = _config_of(edited, edited_shown)
            _, edited_plan = _render(stack, edited_raw, edited_shown)
            if play.up("edit", what, edited_plan, refresh=True).refused_by == "":
                raw = edited_raw
        except ConfigError as err:
            play.refused("edit", what, err)
    elif play.steps[-1].name != "edit":
        play.steps.append(Step("edit", what))

    current = settings_from_config(*checked_engine_config(raw, shown), shown)
    upgraded, what = upgrade_edit(raw, current)
    if upgraded is not None:
        try:
            _, upgraded_plan = _render(stack, upgraded, shown)
            play.up("upgrade", what, upgraded_plan, refresh=True)
        except ConfigError as err:
            play.refused("upgrade", what, err)
    else:
        play.steps.append(Step("upgrade", what))
    play.up("after upgrade", "`pulumi refresh`, then `pulumi up` with no edit", play.plan, refresh=True)
    return Rehearsal(stack, play.steps)


def _read(path: Path, shown: str) -> bytes:
    if not path.is_file():
        raise UsageError(f"no stack file {shown}")
    return path.read_bytes()


def format_rehearsal(r: Rehearsal) -> str:
    """Per step: what it is, then what the engine would do (or why it is refused), then what it loses."""
    lines = [f"rehearsal of stack {r.stack}:"]
    for i, step in enumerate(r.steps, 1):
        lines.append(f"step {i} {step.name}: {step.what}")
        if step.refused_by == "settings":
            lines.append("  refused by the settings; nothing applied:")
        elif step.refused_by == "Pulumi":
            lines.append(f"  {summary(step.diff)}")
            # The diff's errors: what Pulumi's preview refuses (protected resources) and what the
            # plan's checks refuse before it (an edit the cloud would drop or a running job lose).
            lines.append("  refused at preview (`platformctl diff` errors); nothing applied:")
        elif step.refused_by == "Magnum":
            lines.append(f"  {summary(step.diff)}")
            lines.append("  refused by Magnum, or failed by its provider, during `pulumi up`; the rehearsal applies nothing of it:")
        if step.refused:
            lines += [f"    {line}" for line in step.refused]
        elif step.diff is None:
            lines.append("  skipped")
            continue
        if step.diff is not None and step.refused_by == "":
            shown = dict(step.diff, notes=step.notes)
            text = "\n".join([summary(shown), *step.notes]) if step.name == "create" else format_diff(shown)
            lines += [f"  {line}" for line in text.splitlines()]
        lines += [f"  error: would {line}: stateful" for line in step.stateful]
    verdict = "FAILED: see the errors above" if r.exit_code() else "ok: no stateful resource replaced or deleted"
    lines.append(f"rehearsal {verdict}")
    return "\n".join(lines)
