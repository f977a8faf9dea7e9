"""An in-memory Neutron (security groups) for time-skipping SecurityGroup workflow tests, registered under the
real activity names.

A new group gets Neutron's two default egress rules, a duplicate rule answers as Neutron's 409 does (the
activity adopts the existing rule), and a group can be marked in use by ports (delete answers in_use).
Projects exist only when added, as Keystone would tell the real activity.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from osprov.activities import errors
from osprov.api import security_group_io as io
from osprov.workflows.all import WORKFLOWS
from tests.workflows.fakes import FakeCloud
from tests.workflows.harness import Harness

FINALIZER = "neutron.osh.openstack.org/finalizer"
DEFAULT_EGRESS = (
    io.RuleKey(direction="egress", ethertype="IPv4"),
    io.RuleKey(direction="egress", ethertype="IPv6"),
)


@dataclass
class FakeGroup:
    id: str
    name: str
    scope: io.Scope
    description: str = ""
    rules: dict[str, io.RuleKey] = field(default_factory=dict)  # rule ID -> key
    ports: int = 0  # ports using the group (delete answers in_use)

    def view(self) -> io.Group:
        rules = [io.Rule(id=i, key=k) for i, k in sorted(self.rules.items())]
        return io.Group(id=self.id, name=self.name, description=self.description, rules=rules)


@dataclass
class FakeNeutron:
    projects: set[tuple[str, str]] = field(default_factory=set)
    groups: dict[str, FakeGroup] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    fail_next: dict[str, str] = field(default_factory=dict)  # activity -> error type
    # This many rule creates are accepted but their answer is lost (Temporal retries: the 409 path adopts).
    lost_rule_answers: int = 0
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add_project(self, project: str = "p", domain: str = "Default") -> io.Scope:
        self.projects.add((project, domain))
        return io.Scope(project=project, domain=domain)

    def add(self, name: str, scope: io.Scope, *rules: io.RuleKey) -> FakeGroup:
        g = FakeGroup(id=f"sg-{next(self._ids)}", name=name, scope=scope)
        for key in rules:
            g.rules[f"r-{next(self._ids):03d}"] = key
        self.groups[g.id] = g
        return g

    def named(self, name: str) -> list[FakeGroup]:
        return sorted((g for g in self.groups.values() if g.name == name), key=lambda g: g.id)

    def count(self, name: str) -> int:
        return sum(1 for c in self.calls if c == name)

    def _enter(self, name: str) -> None:
        self.calls.append(name)
        kind = self.fail_next.pop(name, None)
        if kind:
            raise errors.error(kind, f"injected {kind} for {name}")

    def _exists(self, scope: io.Scope) -> bool:
        return (scope.project, scope.domain) in self.projects

    def _read(self, scope: io.Scope, name: str) -> list[io.Group]:
        return [g.view() for g in self.named(name) if g.scope == scope]

    def activities(self) -> list[Any]:
        neutron = self

        @activity.defn(name=io.FIND_GROUP.name)
        async def find_group(req: io.FindGroup) -> io.GroupLookup:
            neutron._enter(io.FIND_GROUP.name)
            if not neutron._exists(req.scope):
                return io.GroupLookup(project_found=False)
            if req.id is not None:  # by ID: the project's group with it, whatever its name
                g = neutron.groups.get(req.id)
                return io.GroupLookup(
                    project_found=True, groups=[g.view()] if g and g.scope == req.scope else []
                )
            return io.GroupLookup(project_found=True, groups=neutron._read(req.scope, req.name))

        @activity.defn(name=io.RESOLVE_GROUPS.name)
        async def resolve_groups(req: io.ResolveGroups) -> io.Resolved:
            """Resources are named by their Neutron group's name here: secgroup-<resource name>."""
            neutron._enter(io.RESOLVE_GROUPS.name)
            ids, missing = {}, {}
            for name in req.names:
                found = neutron._read(req.scope, io.security_group_name(name))
                if len(found) == 1:
                    ids[name] = found[0].id
                else:
                    missing[name] = "has no Neutron security group yet"
            return io.Resolved(ids=ids, missing=missing)

        @activity.defn(name=io.CREATE_GROUP.name)
        async def create_group(req: io.CreateGroup) -> io.Group:
            neutron._enter(io.CREATE_GROUP.name)
            if not neutron._exists(req.scope):
                raise errors.not_found("project does not exist")
            existing = neutron._read(req.scope, req.name)
            if existing:
                return existing[0]
            g = neutron.add(req.name, req.scope, *DEFAULT_EGRESS)
            g.description = req.description
            return g.view()

        @activity.defn(name=io.UPDATE_GROUP.name)
        async def update_group(req: io.UpdateGroup) -> io.Group:
            neutron._enter(io.UPDATE_GROUP.name)
            g = neutron.groups[req.id]
            g.description = req.description
            return g.view()

        @activity.defn(name=io.CREATE_RULE.name)
        async def create_rule(req: io.CreateRule) -> io.Rule:
            neutron._enter(io.CREATE_RULE.name)
            g = neutron.groups[req.group_id]
            same = [i for i, k in g.rules.items() if k == req.key]
            if same:  # Neutron's 409 SecurityGroupRuleExists: the real activity adopts the rule
                return io.Rule(id=same[0], key=req.key)
            rule_id = f"r-{next(neutron._ids):03d}"
            g.rules[rule_id] = req.key
            if neutron.lost_rule_answers > 0:
                neutron.lost_rule_answers -= 1
                raise errors.transient("Neutron is unreachable (RemoteDisconnected)")
            return io.Rule(id=rule_id, key=req.key)

        @activity.defn(name=io.DELETE_RULE.name)
        async def delete_rule(req: io.DeleteRule) -> bool:
            neutron._enter(io.DELETE_RULE.name)
            g = neutron.groups.get(req.group_id)
            return g is not None and g.rules.pop(req.rule_id, None) is not None

        @activity.defn(name=io.DELETE_GROUP.name)
        async def delete_group(req: io.DeleteGroup) -> io.DeleteResult:
            neutron._enter(io.DELETE_GROUP.name)
            g = neutron.groups.get(req.id)
            if g is None:
                return io.DeleteResult(outcome="absent")
            if g.ports:
                return io.DeleteResult(outcome="in_use")
            del neutron.groups[req.id]
            return io.DeleteResult(outcome="deleted")

        return [
            find_group,
            resolve_groups,
            create_group,
            update_group,
            create_rule,
            delete_rule,
            delete_group,
        ]


class SecurityGroupHarness(Harness):
    neutron: FakeNeutron

    def status(self) -> dict[str, Any]:
        return self.cloud.statuses[-1] if self.cloud.statuses else {}

    def condition(self) -> dict[str, Any]:
        return next((c for c in self.status().get("conditions", []) if c["type"] == "Available"), {})


async def security_group_harness(tenv: WorkflowEnvironment) -> AsyncIterator[SecurityGroupHarness]:
    """A worker running the production workflows against FakeCloud (Kubernetes) and FakeNeutron."""
    cloud, neutron = FakeCloud(), FakeNeutron()
    queue = f"q-{uuid.uuid4()}"
    async with Worker(
        tenv.client,
        task_queue=queue,
        workflows=WORKFLOWS,
        activities=cloud.activities() + neutron.activities(),
    ):
        hs = SecurityGroupHarness(tenv, cloud, queue)
        hs.neutron = neutron
        yield hs
        await hs.close()


SSH = {"direction": "ingress", "protocol": "tcp", "portRangeMin": 22, "portRangeMax": 22}


async def replay_scenario(h: Harness, kind: str) -> str:
    """tests/replay scenario for SecurityGroup: create (G3, R1, R2×2, R3), a resync, a rule added and the
    description changed (G5, R1), a delete refused while in use (D5), then deleted (D4, D2)."""
    neutron = FakeNeutron()
    neutron.add_project()
    queue = f"{h.queue}-neutron"
    activities = h.cloud.activities() + neutron.activities()
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        sh = SecurityGroupHarness(h.env, h.cloud, queue)
        sh.neutron = neutron
        spec: dict[str, Any] = {"project": {"name": "p", "domain": "Default"}, "deletionPolicy": "delete"}
        spec["rules"] = [SSH]
        wf = await sh.apply(kind, spec, name="replay", uid="replay-secgroup")
        await sh.until(lambda: sh.condition().get("reason") == "Provisioned", "group converged")
        finds = neutron.count(io.FIND_GROUP.name)
        await h.env.sleep(601)
        await sh.until(lambda: neutron.count(io.FIND_GROUP.name) > finds, "group resynced")
        changed = spec | {"description": "web", "rules": [SSH, {"direction": "egress"}]}
        await sh.signal(wf, 2, changed, finalizers=[FINALIZER])
        await sh.until(lambda: sh.status().get("observedGeneration") == 2, "generation 2")
        [group] = neutron.named(io.security_group_name("replay-secgroup"))
        group.ports = 1
        await sh.signal(wf, 2, changed, deleting=True, finalizers=[FINALIZER])
        await sh.until(lambda: sh.condition().get("reason") == "Deprovisioning", "delete waits for ports")
        group.ports = 0
        await wf.result()
        return wf.id


async def observe_scenario(h: Harness, kind: str) -> str:
    """tests/replay scenario for an unmanaged SecurityGroup (O1, OG1): observe an imported group, a resync,
    delete (nothing is called: deletionPolicy retain)."""
    neutron = FakeNeutron()
    legacy = neutron.add("legacy", neutron.add_project(), *DEFAULT_EGRESS)
    queue = f"{h.queue}-neutron"
    activities = h.cloud.activities() + neutron.activities()
    async with Worker(h.env.client, task_queue=queue, workflows=WORKFLOWS, activities=activities):
        sh = SecurityGroupHarness(h.env, h.cloud, queue)
        sh.neutron = neutron
        spec: dict[str, Any] = {
            "project": {"name": "p", "domain": "Default"},
            "managementPolicy": "unmanaged",
            "import": {"id": legacy.id},
        }
        wf = await sh.apply(kind, spec, name="observed", uid="replay-secgroup-observe")
        await sh.until(lambda: sh.condition().get("reason") == "Provisioned", "group observed")
        await h.env.sleep(601)
        await sh.until(lambda: neutron.count(io.FIND_GROUP.name) >= 2, "group resynced")
        await sh.signal(wf, 1, spec, deleting=True)
        await wf.result()
        return wf.id
