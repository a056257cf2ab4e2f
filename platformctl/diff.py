"""Compare two plans the way `pulumi up` would act on them: every resource is created,
updated, replaced (naming the input that forces it) or deleted.

A resource is keyed by its URN without the stack, so two stacks compare. A new resource
that takes over an old one through its aliases (aliases.py) is compared with it as if its
URN had not changed, and is listed as renamed; a URN that changes without an alias is a
delete and a create, as in the engine. Replacement follows the providers' rules
(replacement.py) and the engine's own:

- a changed explicit provider replaces the resource when the provider's config diff
  would (different provider, or one that is itself replaced); the Kubernetes provider's
  config diff is DiffConfig's (replacement.kubernetes_diff_config: only another active
  cluster or clusterIdentifier replaces; where the plan cannot know, a note says what decides);
- secret inputs compare by their keyed digests (secret_digests.py), so a changed secret
  is seen without its value;
- options alone (protect, dependsOn, ...) are no update: the engine takes a `same` step;
- delete-first as the provider's diff answers it (a named Kubernetes object, a bridged
  resource with a given name), never for a replacement a provider change causes;
- `ignoreChanges` paths take their old values before anything is compared (a note names
  each edit that is kept out this way: it does not reach the cloud);
- a replaced resource's outputs are unknown until it exists again, so a dependent whose
  inputs carry them (its id or name as the plan shows them; any secret) sees those
  inputs change, and is replaced where they force it. The offline plan does not record
  which input came from which resource, so this is matched by value. A Kubernetes object
  replaced under its own name gets the same name and id back, so a dependent that takes
  only those and is not replaced by them is left alone (a note says so);

Deleting a resource the old plan marks `protect`, or replacing one both plans protect, is an
error (the engine refuses it); so is replacing or deleting a `retainOnDelete` one (the old
object stays in the cloud, no longer managed), and an update the API server refuses
(replacement.APISERVER_IMMUTABLE), and an edit that kills a TrainJob whose stack refuses it
(running_jobs.py). Everything is keyed in dicts and walked once: linear in resources.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from . import aliases
from .autonaming import keep_old_names
from .day2_hints import ignored_change_hint, node_bound_note, node_group_create_note, node_group_delete_note, replacement_hint
from .errors import UsageError
from .plan_facts import magnum_driver
from .plan_model import SECRET
from .propertypath import Path as PropPath
from .propertypath import format_path, is_prefix, leaf_changes, parse, reset, value_at
from .replaced_deletes import replaced_delete_notes
from .replacement import (
    KUBERNETES_PROVIDER,
    PROVIDERS,
    ConfigDiff,
    forcing_change,
    kubernetes_diff_config,
    mutability_note,
    refused_update,
    rules_for,
)
from .running_jobs import running_job_findings
from .secret_digests import KEY_ENV
from .template_edits import template_edit_findings

COMPARED = ("inputs", "parent", "provider", "dependsOn", "protect", "retainOnDelete", "deleteBeforeReplace", "ignoreChanges",
            "replaceOnChanges")
REDACTED = ("[secret]", "[unknown]")
# Shorter ids or names match too much by substring.
MIN_TOKEN = 6


class NotAPlan(UsageError):
    pass


def load_plan_json(path: Path) -> dict[str, Any]:
    """A saved plan: a plan directory or its resources.json; raises NotAPlan for anything else."""
    file = path / "resources.json" if path.is_dir() else path
    if not file.is_file():  # also keeps devices and FIFOs from being read
        raise NotAPlan(f"{path} is not a plan: {'no resources.json in the directory' if path.is_dir() else 'not a regular file'}")
    try:
        data = json.loads(file.read_bytes())
    except (ValueError, RecursionError) as err:  # ValueError covers bad JSON and bad UTF-8
        raise NotAPlan(f"{file} is not a plan: not JSON: {err}") from None
    problem = plan_shape_problem(data)
    if problem:
        raise NotAPlan(f"{file} is not a plan: {problem}")
    return data


def plan_shape_problem(data: Any) -> str | None:
    """What keeps a JSON value from being a plan (resources.json) that diff and policy can read."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    if not isinstance(data.get("stack"), str):
        return "no stack name"
    if not isinstance(data.get("resources"), list):
        return "no resources list"
    for i, r in enumerate(data["resources"]):
        if not isinstance(r, dict) or not all(isinstance(r.get(k), str) for k in ("urn", "type", "name")):
            return f"resources[{i}] has no urn, type and name"
        if not all(isinstance(r.get(k), t) for k, t in (("inputs", dict), ("outputs", dict), ("dependsOn", list)) if r.get(k) is not None):
            return f"resources[{i}] has inputs, outputs or dependsOn of the wrong type"
        if not all(isinstance(r.get(k) or "", str) for k in ("parent", "provider")):
            return f"resources[{i}] has a parent or provider that is not a URN"
        # Plans written before aliases were recorded have none.
        if not isinstance(r.get("aliases") or [], list) or not all(map(aliases.well_formed, r.get("aliases") or ())):
            return f"resources[{i}] has aliases that are not a list of URNs and alias specs"
    return None


def _urn_key(urn: str) -> str:
    return urn.split("::", 1)[1] if "::" in urn else urn


def _key(resource: dict[str, Any]) -> str:
    # Stack names differ between two stacks; the URN without the stack part identifies a resource.
    return _urn_key(resource["urn"])


def _strip_stack(value: Any, stack: str) -> Any:
    if isinstance(value, str):
        # The stack's name appears in every URN and in the root Stack resource's own name.
        return value.replace(f"urn:pulumi:{stack}::", "urn:pulumi:STACK::").replace(
            f"pulumi:pulumi:Stack::inference-platform-{stack}", "pulumi:pulumi:Stack::inference-platform-STACK"
        )
    if isinstance(value, list):
        return [_strip_stack(v, stack) for v in value]
    if isinstance(value, dict):
        return {k: _strip_stack(v, stack) for k, v in value.items()}
    return value


def changed_paths(a: Any, b: Any, path: str = "") -> list[str]:
    """Key paths (a.b[0].c) where two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            sub = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                out.append(sub)
            else:
                out += changed_paths(a[k], b[k], sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += changed_paths(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [path or "."]


# --------------------------------------------------------------------------- classification


@dataclass
class Change:
    key: str
    action: str  # create | update | replace | delete
    type: str
    paths: list[str] = field(default_factory=list)  # changed_paths of the compared fields
    reason: str = ""  # replace: the input (or provider) that forces it
    delete_first: bool = False  # replace: the old object goes before the new one exists
    # Inputs unknown until a replaced dependency exists again: path -> that dependency.
    unknown: dict[str, str] = field(default_factory=dict)


def _provider_key(resource: dict[str, Any]) -> Optional[str]:
    return _urn_key(resource["provider"]) if resource.get("provider") else None


def _deps(resource: dict[str, Any]) -> Iterator[str]:
    yield from (_urn_key(u) for u in resource.get("dependsOn") or ())
    if resource.get("provider"):
        yield _provider_key(resource)


def _topological(keys: set[str], rb: dict[str, dict[str, Any]]) -> list[str]:
    """Keys ordered dependencies first (Kahn); ties in key order, so the walk is stable."""
    dependents: dict[str, list[str]] = {k: [] for k in keys}
    missing: dict[str, int] = {}
    for k in keys:
        deps = {d for d in _deps(rb[k]) if d in keys and d != k}
        missing[k] = len(deps)
        for d in deps:
            dependents[d].append(k)
    ready = deque(sorted(k for k in keys if not missing[k]))
    order = []
    while ready:
        k = ready.popleft()
        order.append(k)
        for d in dependents[k]:
            missing[d] -= 1
            if not missing[d]:
                ready.append(d)
    # A cycle cannot be registered; keep any leftovers rather than lose them.
    return order + sorted(keys - set(order))


def _ignore_paths(resource: dict[str, Any]) -> list[PropPath]:
    out = []
    for text in resource.get("ignoreChanges") or ():
        try:
            out.append(parse(text))
        except ValueError:
            continue  # the engine reports it; nothing is ignored
    return out


def _output_tokens(resource: dict[str, Any]) -> set[str]:
    """Strings a dependent may have taken from this resource's outputs: its id and names as
    the mock runtime gives them, and outputs it computes that are not inputs."""
    from pulumi.runtime.mocks import MockResourceArgs

    from .engine import PlatformMocks

    inputs = resource.get("inputs") or {}
    rid, outputs = PlatformMocks().new_resource(MockResourceArgs(
        typ=resource["type"], name=resource["name"], inputs=json.loads(json.dumps(inputs)),
        provider=None, resource_id=None, custom=True,
    ))
    given = set(_strings(inputs))
    tokens = {s for s in _strings(outputs) if s not in given} | {rid}
    # A Kubernetes object's name is an output too, known again only once it is recreated.
    tokens.add(((resource.get("outputs") or {}).get("metadata") or {}).get("name") or "")
    return {t for t in tokens if isinstance(t, str) and len(t) >= MIN_TOKEN and t not in REDACTED}


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _derived_paths(value: Any, tokens: set[str], path: PropPath = ()) -> Iterator[PropPath]:
    """Leaves of `value` that carry one of `tokens`, or a redacted value."""
    if isinstance(value, dict):
        for k in sorted(value):
            yield from _derived_paths(value[k], tokens, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _derived_paths(v, tokens, path + (i,))
    elif isinstance(value, str) and (value in REDACTED or any(t in value for t in tokens)):
        yield path


def _unknown_inputs(new, new_in, ignores, replaced, rb, tokens) -> dict[PropPath, str]:
    """Inputs unknown until a replaced dependency exists again: path -> that dependency."""
    unknown: dict[PropPath, str] = {}
    # Which inputs hold which resources' outputs, where the plan records it (older plans do not).
    recorded = new.get("propertyDependencies")
    for dep in dict.fromkeys(_deps(new)):
        # A replaced provider replaces its resources outright (_provider_replaced).
        if dep in replaced and dep != _provider_key(new):
            if dep not in tokens:
                tokens[dep] = _output_tokens(rb[dep])
            scope = new_in if recorded is None else {
                k: v for k, v in new_in.items() if dep in {_urn_key(u) for u in recorded.get(k, ())}}
            for p in _derived_paths(scope, tokens[dep]):
                unknown.setdefault(p, dep)
    return {p: d for p, d in unknown.items() if not any(is_prefix(i, p) for i in ignores)}


def _provider_replaced(old: dict[str, Any], new: dict[str, Any], ra, rb, replaced: dict[str, str],
                       compare_secrets: bool) -> Optional[str]:
    """Why a change of the resource's explicit provider replaces it, or None (step_generator.go providerChanged)."""
    old_p, new_p = _provider_key(old), _provider_key(new)
    if old_p == new_p:
        return f"provider {new_p} is replaced" if new_p in replaced else None
    if old_p is None or new_p is None or old_p not in ra or new_p not in rb:
        # A default provider has no record in the plan; assume the worst.
        return f"provider {old_p} -> {new_p}"
    if new_p in replaced:
        return f"provider {old_p} -> {new_p}"
    # The new provider's DiffConfig on the two providers' inputs decides.
    old_in, new_in = ra[old_p].get("inputs") or {}, rb[new_p].get("inputs") or {}
    changes = leaf_changes(old_in, new_in) + _secret_changes(ra[old_p], rb[new_p], old_in, new_in, [], compare_secrets)
    if _provider_config_diff(ra[old_p], rb[new_p], old_in, new_in, changes, {}).replaces is not None:
        return f"provider {old_p} -> {new_p}"
    return None


def _provider_config_diff(old, new, old_in, new_in, changes: list[PropPath], unknown: dict) -> ConfigDiff:
    """A provider resource's config diff: DiffConfig for the Kubernetes provider, its rules otherwise."""
    if new["type"] == KUBERNETES_PROVIDER:
        active = (old.get("activeClusterDigest"), new.get("activeClusterDigest"))
        return kubernetes_diff_config(old_in, new_in, {p[0] for p in changes}, {p[0] for p in unknown}, active)
    rules = PROVIDERS[new["type"]]
    forced = forcing_change(rules, old_in, new_in, changes) or forcing_change(rules, old_in, new_in, list(unknown))
    return ConfigDiff(format_path(forced) if forced is not None else None)


def _secret_changes(old, new, old_in, new_in, ignores, compare_secrets: bool) -> list[PropPath]:
    """Secret inputs whose values differ, by their keyed digests (secret_digests.py); only
    between plans whose digests were made with one key, and where both sides still hold a secret."""
    if not compare_secrets:
        return []
    before, after = old.get("secretDigests") or {}, new.get("secretDigests") or {}
    out = []
    for text in sorted(set(before) & set(after)):
        if before[text] == after[text]:
            continue
        path = parse(text)
        if any(is_prefix(i, path) for i in ignores):
            continue
        if value_at(old_in, path) == SECRET and value_at(new_in, path) == SECRET:
            out.append(path)
    return out


def _replace_on_changes(new: dict[str, Any], input_changes: list[PropPath]) -> Optional[str]:
    # step_generator.go: a changed input under a replaceOnChanges path replaces the resource,
    # whatever the provider's diff says ("*" matches every input).
    for text in new.get("replaceOnChanges") or ():
        pattern = parse(text)
        for path in input_changes:
            if is_prefix(pattern, path) or is_prefix(path, pattern):
                return f"replaceOnChanges {text} (input {format_path(path)})"
    return None


def _delete_first(old: dict[str, Any], new: dict[str, Any], by_provider: bool) -> bool:
    if new.get("deleteBeforeReplace"):
        return True
    if by_provider:
        # step_generator.go diff(): a provider change replaces without asking the resource's
        # provider, so no DeleteBeforeReplace comes back; only the option asks for it.
        return False
    if new["type"].split(":", 1)[0] in AUTONAMING_BRIDGED:
        # pulumi-terraform-bridge tfbridge/schema.go nameRequiresDeleteBeforeReplace: `name` is
        # autonamed (SetAutonaming), so one the program gives is kept and the old must go first.
        return "name" in (new.get("inputs") or {})
    # provider.go Diff: a replaced Kubernetes object that keeps its given name and namespace
    # must be deleted before it can be created again.
    return _keeps_kubernetes_name(old, new)


def _keeps_kubernetes_name(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """A Kubernetes object (not a Helm release) whose given name and namespace stay: its id
    (namespace/name) and name are the same once it is created again."""
    if not new["type"].startswith("kubernetes:") or new["type"].startswith("kubernetes:helm.sh"):
        return False
    meta_old = (old.get("inputs") or {}).get("metadata") or {}
    meta_new = (new.get("inputs") or {}).get("metadata") or {}
    return bool(meta_new.get("name")) and all(meta_old.get(k) == meta_new.get(k) for k in ("name", "namespace"))


def _in_stack(resource: dict[str, Any], stack: str) -> dict[str, Any]:
    # An alias that names the plan's own stack names it as every URN does once stripped.
    specs = [dict(a, stack="STACK") if a.get("stack") == stack else a for a in resource.get("aliases") or ()]
    return dict(resource, aliases=specs)


def _take_over(ra, rb, stack: str) -> tuple[dict[str, dict[str, Any]], dict[str, str], list[str]]:
    """Old resources that new ones take over through their aliases, as the engine finds them:
    the old plan keyed by the new keys, with its URN references (parent, dependencies,
    provider) moved along so the pairs compare like same-URN pairs; old key -> new key;
    and an error for each old URN that two resources claim."""
    matched, conflicts = aliases.resolve({r["urn"] for r in ra.values()}, (_in_stack(r, stack) for r in rb.values()))
    errors = [f"error: duplicate resource alias {_urn_key(c.old)} applied to {_urn_key(c.claimant)} "
              f"conflicts with {_urn_key(c.rival)}" for c in conflicts]
    if not matched:
        return ra, {}, errors
    moved = {old: new for new, old in matched.items()}

    def move(r: dict[str, Any]) -> dict[str, Any]:
        out = dict(r, urn=moved.get(r["urn"], r["urn"]))
        for f in ("parent", "provider"):
            if r.get(f):
                out[f] = moved.get(r[f], r[f])
        deps = [moved.get(u, u) for u in r.get("dependsOn") or ()]
        if deps != (r.get("dependsOn") or []):
            out["dependsOn"] = sorted(deps)  # the engine records them sorted
        return out

    renamed = {_urn_key(old): _urn_key(new) for old, new in moved.items()}
    return {renamed.get(k, k): move(r) for k, r in ra.items()}, renamed, errors


# Bridged providers whose resources.go calls SetAutonaming(255, "-") (pulumi-openstack
# provider/resources.go): every `name` input is autonamed unless the program sets it.
AUTONAMING_BRIDGED = frozenset({"openstack"})


# A dynamic resource's pickled provider (`__provider`) names the module the provider class lives
# in. The engine asks that provider's own diff (pulumi/dynamic/__main__.py, Diff), and ours
# compare only their declared inputs, so a provider that moved module is no change: the state
# keeps its old reference until a real update, and the old module path must keep loading
# (components/s3bucket.py).
DYNAMIC_PREFIX = "pulumi-python:dynamic/"


def _without_provider(inputs: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in inputs.items() if k != "__provider"}


def _classify(ra, rb, compare_secrets: bool = False, driver: Optional[str] = None) -> tuple[list[Change], list[str], list[str]]:
    changes: list[Change] = []
    errors: list[str] = []
    notes: list[str] = []
    replaced: dict[str, str] = {}  # key -> reason
    kept_names: set[str] = set()  # replaced Kubernetes objects that keep their given name
    tokens: dict[str, set[str]] = {}
    common = set(ra) & set(rb)
    for key in _topological(common, rb):
        old, new = ra[key], rb[key]
        old_in, new_in = old.get("inputs") or {}, new.get("inputs") or {}
        if new["type"].startswith(DYNAMIC_PREFIX):
            old_in, new_in = _without_provider(old_in), _without_provider(new_in)
        ignores = _ignore_paths(new)
        for ignore in ignores:
            kept = reset(old_in, new_in, ignore)
            notes += [f"note: {key}: inputs.{format_path(p)} changed but ignoreChanges keeps the old value"
                      + ignored_change_hint(new, p, new_in, driver) for p in leaf_changes(kept, new_in)]
            new_in = kept
        secret_changes = _secret_changes(old, new, old_in, new_in, ignores, compare_secrets)
        paths = [p for f in COMPARED for p in changed_paths(dict(old, inputs=old_in).get(f), dict(new, inputs=new_in).get(f), f)]
        paths += [f"inputs.{format_path(p)}" for p in secret_changes]
        unknown = _unknown_inputs(new, new_in, ignores, replaced, rb, tokens)
        reason = None
        if new.get("custom", True) and new["type"] not in PROVIDERS:
            reason = _provider_replaced(old, new, ra, rb, replaced, compare_secrets)
        by_provider = reason is not None
        if not paths and not unknown and reason is None:
            continue
        input_changes = leaf_changes(old_in, new_in) + secret_changes
        if not input_changes and not unknown and reason is None:
            # Options alone (protect, dependsOn, ...) reach no provider's diff: the engine takes a
            # `same` step that records them (step_generator.go, "Planner decided not to update").
            options = sorted({p.split(".", 1)[0].split("[", 1)[0] for p in paths})
            notes.append(f"note: {key}: only options changed ({', '.join(options)}): no update, the engine records them")
            continue
        if reason is None:
            reason = _replace_on_changes(new, input_changes)
        if reason is None and unknown:
            # An input unknown until a replaced dependency exists again is a changed key in the
            # provider's diff too, so replaceOnChanges applies to it (step_generator.go).
            reason = _replace_on_changes(new, list(unknown))
            if reason is not None:
                reason += f" <- replaced {next(d for p, d in unknown.items() if format_path(p) in reason)}"
        if new["type"] in PROVIDERS:
            config = _provider_config_diff(old, new, old_in, new_in, input_changes, unknown)
            if config.note:
                notes.append(f"note: {key}: {config.note}")
            if reason is None and config.replaces is not None:
                source = unknown.get(parse(config.replaces))
                reason = f"input {config.replaces}" + (f" <- replaced {source}" if source else "")
            rules = PROVIDERS[new["type"]]
        else:
            rules = rules_for(new, (rb.get(_provider_key(new)) or {}).get("inputs"))
        if rules is None:
            if (input_changes or unknown) and reason is None:
                errors.append(f"error: no replacement rules for {new['type']} ({key}): cannot tell update from replace")
        elif reason is None and new["type"] not in PROVIDERS:
            forced = forcing_change(rules, old_in, new_in, input_changes)
            if forced is not None:
                reason = f"input {format_path(forced)}"
                note = mutability_note(new, (rb.get(_provider_key(new)) or {}).get("inputs"), forced)
                if note:
                    notes.append(f"note: {key}: {note}")
            else:
                forced = forcing_change(rules, old_in, new_in, list(unknown))
                if forced is not None:
                    reason = f"input {format_path(forced)} <- replaced {unknown[forced]}"
        if reason is None and unknown:
            # Only the dependents a replacement would replace go with it (step_generator.go
            # calculateDependentReplacements); the others take their inputs once it exists again,
            # and a Kubernetes object replaced under its own name has the same name and id then.
            resolved = [p for p, d in unknown.items() if d in kept_names and value_at(new_in, p) not in REDACTED]
            for p in resolved:
                notes.append(f"note: {key}: inputs.{format_path(p)} takes the name of {unknown.pop(p)}, "
                             "which its replacement keeps: no change")
            if not input_changes and not unknown:
                continue
        shown = {f"inputs.{format_path(p)}": d for p, d in unknown.items()}
        if reason is None:
            changes.append(Change(key, "update", new["type"], paths, unknown=shown))
            refused = refused_update(new["type"], input_changes)
            if refused is not None:
                errors.append(f"error: update of {new['type']} {key.rsplit('::', 1)[-1]} changes {format_path(refused)}, "
                              "which the API server refuses to change: `pulumi up` would fail; give the object a new "
                              "name to replace it (kubernetes ValidatePriorityClassUpdate)")
        else:
            replaced[key] = reason
            delete_first = _delete_first(old, new, by_provider)
            if delete_first and _keeps_kubernetes_name(old, new):
                kept_names.add(key)
            changes.append(Change(key, "replace", new["type"], paths, reason, delete_first, shown))
    changes += [Change(k, "create", rb[k]["type"]) for k in sorted(set(rb) - common)]
    changes += [Change(k, "delete", ra[k]["type"]) for k in sorted(set(ra) - common)]
    for c in changes:
        if c.action in ("replace", "delete"):
            errors += _guard_errors(c, ra[c.key], rb.get(c.key))
    return sorted(changes, key=lambda c: (ACTIONS.index(c.action), c.key)), errors, notes


def _guard_errors(change: Change, old: dict[str, Any], new: Optional[dict[str, Any]]) -> list[str]:
    """The deployed resource's flags decide (the engine's state is the old plan); a replacement
    is refused only while the program keeps `protect` too (step_generator.go: `new.Protect &&
    old.Protect`: unprotecting and replacing in one `up` is allowed), a delete on the old flag."""
    why = f" ({change.reason})" if change.reason else ""
    name = f"{change.type} {change.key.rsplit('::', 1)[-1]}"  # the URN is in --urns and --output json
    out = []
    if old.get("protect") and (change.action == "delete" or (new or {}).get("protect")):
        out.append(f"error: {change.action} of protected resource {name}{why}" + replacement_hint(change.type, change.reason or ""))
    if old.get("retainOnDelete"):
        fate = "the old one" if change.action == "replace" else "it"
        out.append(f"error: {change.action} of retainOnDelete resource {name}{why}: "
                   f"{fate} stays in the cloud, no longer managed by Pulumi")
    return out


ACTIONS = ("create", "update", "replace", "delete")


def _typed(resource: dict[str, Any]) -> dict[str, Any]:
    # The URN carries the type too (after the parents' types): urn:pulumi:STACK::PROJECT::A$B::NAME.
    resource.setdefault("type", resource["urn"].split("::")[2].rsplit("$", 1)[-1])
    return resource


def diff_plans(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    ra = {_key(r): _typed(_strip_stack(r, a["stack"])) for r in a["resources"]}
    rb = {_key(r): _typed(_strip_stack(r, b["stack"])) for r in b["resources"]}
    ra, renamed, alias_errors = _take_over(ra, rb, b["stack"])
    rb = keep_old_names(ra, rb)
    keys = (a.get("secretDigestKey"), b.get("secretDigestKey"))
    changes, errors, notes = _classify(ra, rb, compare_secrets=bool(keys[0]) and keys[0] == keys[1], driver=magnum_driver(b))
    if all(keys) and keys[0] != keys[1]:
        notes.append("note: secret inputs not compared: the two plans' digests were made with different keys "
                     f"(set {KEY_ENV} alike where both are rendered)")
    notes += replaced_delete_notes(changes, rb)
    killed, restarted = running_job_findings(changes, ra, rb)
    errors += killed
    notes += restarted
    notes += [n for c in changes if c.action == "update" for n in [node_bound_note(
        c.key, rb[c.key], ra[c.key].get("inputs") or {}, rb[c.key].get("inputs") or {})] if n]
    notes += [n for c in changes for n in [node_group_delete_note(c.key, c.action, ra.get(c.key, {}))] if n]
    notes += [n for c in changes for n in [node_group_create_note(c.key, c.action, rb.get(c.key, {}))] if n]
    dropped, deferred = template_edit_findings(changes, ra, rb, magnum_driver(b))
    errors += dropped
    notes += deferred
    return {
        "added": sorted(set(rb) - set(ra)),
        "removed": sorted(set(ra) - set(rb)),
        "renamed": dict(sorted(renamed.items(), key=lambda kv: kv[1])),  # old key -> new key
        "changed": {c.key: c.paths for c in sorted(changes, key=lambda c: c.key) if c.paths},
        "changes": changes,
        "errors": sorted(errors + alias_errors),
        "notes": sorted(notes),
        # The compared resources by key (old keyed by the new keys where an alias takes it over):
        # what diff_view reads values, names and components from.
        "old": ra,
        "new": rb,
    }


def exit_code(d: dict[str, Any]) -> int:
    return 1 if d["errors"] else 0
