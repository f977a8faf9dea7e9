"""The SecurityGroup passes as pure decision tables (the tables below and docs/security-group.md).

No I/O and no Temporal: workflows/security_group.py starts a pass with an empty `Observation`, asks
`converge` (G…, then R…) or `delete` (D…) for the next step, executes it, folds the result in and asks again
until a decision ends the pass. Every pass starts from a fresh read by the deterministic name (exact match,
done by the activity), so a crash between "create accepted" and "status written" adopts the group, and a
crash between two rule calls leaves a state the next pass's read converges from. The group is never
recreated: rules are added and removed in place.

Converge (reconcile):
  G1 read the group secgroup-{uid} (exact name) in the project; project missing -> Available=False/Provisioning
     "project … does not exist yet", retried
  G2 two or more exact-name matches -> Available=False/Errored (consistency), retried with backoff
  G3 no match                       -> create the group (Neutron adds its default egress rules), go on
  G4 one match                      -> adopt it
  G5 description differs            -> update it in place
  R0 a rule names another SecurityGroup -> resolve those groups' Neutron IDs; one without a group yet (or
                                       living elsewhere) -> Available=False/Provisioning naming it, retried
  R1 a spec rule Neutron lacks      -> create it (a 409 "exists" adopts Neutron's rule), first in spec order:
                                       new rules exist before old ones go, so a changed rule never leaves a gap
  R2 a Neutron rule not in the spec -> delete it (Neutron's default egress rules included), or a second rule
                                       with the same key (one of each is kept, lowest ID first)
  R3 Neutron holds exactly the spec's rules -> Available=True/Provisioned; status securityGroupID, ruleCount
Observe only (managementPolicy unmanaged with import; never a create, an update or a delete; spec.rules must
be empty, CEL):
  O1 read the imported group: by import.id, or every group named exactly import.filter.name, in the project
  O2 project missing in Keystone    -> Available=False/Provisioning (as G1), retried
  O3 no such group                  -> Available=False/Errored "nothing to observe", retried
  O4 two or more with that name     -> Available=False/Errored (import one by ID), retried
  OG1 the one group                 -> Available=True/Provisioned "observing …"; status securityGroupID, ruleCount
Delete (finalize, deletionPolicy=delete):
  D1 project missing in Keystone    -> done: no group can have been created
  D2 no exact-name match            -> done (also how an accepted delete is confirmed: re-read)
  D3 two or more matches            -> fail closed (consistency), retried
  D4 one match                      -> delete it (its rules go with it), then re-read (D2)
  D5 Neutron answers 409 (ports still use the group) -> Available=False/Deprovisioning "still in use: remove
                                       it from the servers and ports using it", re-checked on a growing timer
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from osprov.api import security_group_io as io
from osprov.api.common import AvailableReason
from osprov.api.security_group import SELF, SecurityGroupSpec, spec_rule_key
from osprov.workflows.observe_import import Refused, Wanted, choose


@dataclass(frozen=True)
class Observation:
    lookup: io.GroupLookup | None = None  # the exact-name read of this pass
    group: io.Group | None = None  # the group as this pass knows it (read, created, rules folded in)
    updated: bool = False  # G5 ran this pass
    resolved: io.Resolved | None = None  # R0: the other groups' IDs
    deleted: io.DeleteResult | None = None  # D4's answer


@dataclass(frozen=True)
class Converged:
    """R3: Available=True."""

    message: str


@dataclass(frozen=True)
class Wait:
    """D5: the cloud must change first (ports let go of the group); re-checked on a durable timer."""

    message: str


@dataclass(frozen=True)
class Fail:
    """The pass cannot finish: the message says what to fix; retried with backoff."""

    message: str
    reason: AvailableReason
    log: str = ""  # the operator log line (with the IDs of `groups`)
    groups: tuple[io.Group, ...] = ()


@dataclass(frozen=True)
class Done:
    """Deleted (or nothing could have been created)."""


Call = (
    io.FindGroup
    | io.ResolveGroups
    | io.CreateGroup
    | io.UpdateGroup
    | io.CreateRule
    | io.DeleteRule
    | io.DeleteGroup
)
Action = Call | Converged | Wait | Fail | Done
DELETE_WAIT = "waiting for Neutron to delete the security group"
IN_USE_MESSAGE = (
    "the security group is still in use by ports (servers or other ports name it); remove it from them and "
    "deletion continues — re-checking"
)


@dataclass(frozen=True)
class Decision:
    rule: str  # step label, e.g. "R1"
    action: Action
    what: str  # a sentence: the step (query, Web UI details) and the call's summary
    observed: io.Group | None = None  # R3: the group the status reports

    @property
    def step(self) -> str:
        return f"{self.rule}: {self.what}"


@dataclass(frozen=True)
class Target:
    """Who the group belongs to: its deterministic name, the resource's namespace (remote groups are
    resolved there) and the project (and credential) every call is scoped to (workflows/tenancy.py)."""

    name: str
    namespace: str
    scope: io.Scope


def _where(target: Target) -> str:
    return f"project {target.scope.project!r} in domain {target.scope.domain!r}"


def _find(target: Target, rule: str) -> Decision:
    find = io.FindGroup(scope=target.scope, name=target.name)
    return Decision(rule, find, f"find security group {target.name} in {_where(target)}")


def _duplicates(target: Target, groups: list[io.Group], reason: AvailableReason, rule: str) -> Decision:
    # Fail closed: which one servers use is for an operator to decide, never a guess.
    message = (
        f"{len(groups)} Neutron security groups are named {target.name}; osprov acts only on a unique match, "
        "so an operator must remove the extra group(s) — retrying"
    )
    failed = Fail(message, reason, "duplicate Neutron security groups", tuple(groups))
    return Decision(rule, failed, f"more than one Neutron security group is named {target.name}")


def remote_names(spec: SecurityGroupSpec) -> list[str]:
    """The other SecurityGroup resources the rules name (sorted, once each)."""
    return sorted({r.remote_group for r in spec.rules if r.remote_group not in (None, SELF)})


def desired_keys(spec: SecurityGroupSpec, group_id: str, resolved: io.Resolved | None) -> list[io.RuleKey]:
    """The spec's rules as canonical keys, in spec order, with remote groups as Neutron IDs."""
    ids = resolved.ids if resolved is not None else {}
    keys = []
    for rule in spec.rules:
        remote = group_id if rule.remote_group == SELF else ids.get(rule.remote_group or "")
        keys.append(spec_rule_key(rule, remote if rule.remote_group else None))
    return keys


def _plan_rules(desired: list[io.RuleKey], group: io.Group) -> tuple[list[io.RuleKey], list[io.Rule]]:
    """(missing spec rules in spec order, Neutron rules to delete by ID): one rule of each key is kept."""
    kept: dict[io.RuleKey, io.Rule] = {}
    extra: list[io.Rule] = []
    wanted = set(desired)
    for rule in sorted(group.rules, key=lambda r: r.id):
        if rule.key in wanted and rule.key not in kept:
            kept[rule.key] = rule
        else:
            extra.append(rule)
    missing = [k for k in desired if k not in kept]
    return missing, extra


# --- converge (G1…G5, R0…R3) ------------------------------------------------------------------------------
def converge(spec: SecurityGroupSpec, target: Target, obs: Observation) -> Decision:
    """The next step of the converge pass."""
    if obs.lookup is None:
        return _find(target, "G1")
    if not obs.lookup.project_found:
        message = (
            f"{_where(target)} does not exist in Keystone yet; create it (for example with a Project "
            "resource) — retrying"
        )
        return Decision("G1", Fail(message, AvailableReason.PROVISIONING), "the project does not exist yet")
    if len(obs.lookup.groups) > 1:
        return _duplicates(target, obs.lookup.groups, AvailableReason.ERRORED, "G2")
    group = obs.group
    if group is None:
        make = io.CreateGroup(scope=target.scope, name=target.name, description=spec.description)
        return Decision("G3", make, f"create security group {target.name}")
    if group.description != spec.description and not obs.updated:
        update = io.UpdateGroup(scope=target.scope, id=group.id, description=spec.description)
        return Decision("G5", update, f"update the description of security group {target.name}")
    names = remote_names(spec)
    if names and obs.resolved is None:
        resolve = io.ResolveGroups(scope=target.scope, namespace=target.namespace, names=names)
        return Decision("R0", resolve, f"find the Neutron groups of SecurityGroups {', '.join(names)}")
    if obs.resolved is not None and obs.resolved.missing:
        name, why = sorted(obs.resolved.missing.items())[0]
        message = f"rules name SecurityGroup {name}, which {why} — retrying"
        return Decision(
            "R0", Fail(message, AvailableReason.PROVISIONING), f"SecurityGroup {name} is not ready"
        )
    missing, extra = _plan_rules(desired_keys(spec, group.id, obs.resolved), group)
    if missing:
        key = missing[0]
        make_rule = io.CreateRule(scope=target.scope, group_id=group.id, key=key)
        return Decision("R1", make_rule, f"add rule {key.describe()} to security group {target.name}")
    if extra:
        gone = extra[0]
        drop = io.DeleteRule(scope=target.scope, group_id=group.id, rule_id=gone.id)
        return Decision("R2", drop, f"remove rule {gone.key.describe()} from security group {target.name}")
    count = len(group.rules)
    message = f"Neutron security group holds exactly the {count} declared rule{'s' if count != 1 else ''}"
    return Decision("R3", Converged(message), message, group)


# --- observe only (O1…O4, OG1) ----------------------------------------------------------------------------
def observe_import(spec: SecurityGroupSpec, target: Target, obs: Observation) -> Decision:
    """The next step of an unmanaged SecurityGroup's pass: read the imported group, report it, change nothing."""
    wanted = Wanted.of(spec.import_)
    if obs.lookup is None:
        find = io.FindGroup(scope=target.scope, name=wanted.name or "", id=wanted.id)
        return Decision("O1", find, f"find the imported security group ({wanted.shown}) in {_where(target)}")
    if not obs.lookup.project_found:
        message = f"{_where(target)} does not exist in Keystone — retrying"
        return Decision("O2", Fail(message, AvailableReason.PROVISIONING), "the project does not exist")
    chosen = choose(obs.lookup.groups, wanted, "Neutron security group", _where(target))
    if isinstance(chosen, Refused):
        return Decision(chosen.rule, Fail(chosen.message, AvailableReason.ERRORED), chosen.message)
    group = chosen.found
    count = len(group.rules)
    message = f"observing Neutron security group {group.id}: {count} rule{'s' if count != 1 else ''}"
    return Decision("OG1", Converged(message), message, group)


def found(obs: Observation, lookup: io.GroupLookup) -> Observation:
    """Fold G1's read in: the one match (if unique) is the group this pass works on."""
    group = lookup.groups[0] if len(lookup.groups) == 1 else None
    return replace(obs, lookup=lookup, group=group)


def rule_added(obs: Observation, rule: io.Rule) -> Observation:
    """Fold R1's answer in (an adopted rule may already be listed)."""
    assert obs.group is not None
    rules = [r for r in obs.group.rules if r.id != rule.id] + [rule]
    return replace(obs, group=obs.group.model_copy(update={"rules": sorted(rules, key=lambda r: r.id)}))


def rule_removed(obs: Observation, rule_id: str) -> Observation:
    assert obs.group is not None
    rules = [r for r in obs.group.rules if r.id != rule_id]
    return replace(obs, group=obs.group.model_copy(update={"rules": rules}))


# --- delete (D1…D5) ---------------------------------------------------------------------------------------
def delete(target: Target, obs: Observation) -> Decision:
    """The next step of the delete pass; a fresh read must confirm absence (D2)."""
    if obs.deleted is not None and obs.deleted.outcome == "in_use":
        return Decision("D5", Wait(IN_USE_MESSAGE), "the security group is still in use by ports")
    confirming = obs.deleted is not None  # D4's delete was answered: this read confirms it
    if obs.lookup is None:
        return _find(target, "D2" if confirming else "D1")
    if not obs.lookup.project_found:
        return Decision("D1", Done(), "the project does not exist: no security group can have been created")
    groups = obs.lookup.groups
    if len(groups) > 1:
        return _duplicates(target, groups, AvailableReason.DEPROVISIONING, "D3")
    if not groups:
        return Decision("D2", Done(), f"security group {target.name} is gone")
    if confirming:  # answered deleted, still listed: never a second delete in this pass
        return Decision("D4", Wait(DELETE_WAIT), DELETE_WAIT)
    drop = io.DeleteGroup(scope=target.scope, id=groups[0].id)
    return Decision("D4", drop, f"delete security group {target.name}")


def deleted(result: io.DeleteResult) -> Observation:
    """Fold D4's answer in: a fresh read comes next (D2), unless ports still use the group (D5)."""
    return Observation(deleted=result)
