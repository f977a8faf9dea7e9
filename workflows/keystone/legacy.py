"""The Keystone kinds' passes from before the ownership record (release 0.1), kept only for replay.

Runs that started before the KeystoneObject workflows existed replay their history with these passes and
switch to claims at their next live pass (workflows/keystone/common.py, `ownership`). Nothing new runs
this code; it goes when `workflow.deprecate_patch` retires the patch (docs/operations.md, "Upgrades").
The command sequence of every function must stay exactly as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from osprov.api import keystone_io as io
    from osprov.api import kube_io
    from osprov.api.common import ReadyReason
    from osprov.api.keystone import (
        DomainSpec,
        EndpointSpec,
        GroupSpec,
        ProjectSpec,
        RoleAssignmentSpec,
        RoleSpec,
        ServiceSpec,
        UserSpec,
    )
    from osprov.api.kube_io import SecretKey
    from osprov.api.messages import ConditionState
    from osprov.api.registry import READY
    from osprov.workflows import patches
    from osprov.workflows.calls import call
    from osprov.workflows.entity import Outcome, PassFailed

if TYPE_CHECKING:
    from osprov.workflows.keystone.common import KeystoneEntity


async def find(kind: io.KeystoneKind, name: str | None = None, **filters: str) -> list[io.KeystoneObject]:
    return await call(
        io.FIND, io.Find(kind=kind, name=name, filters=filters), summary=f"find {kind} {name or ''}"
    )


async def require(kind: io.KeystoneKind, label: str, name: str, **filters: str) -> io.KeystoneObject:
    found = await find(kind, name, **filters)
    if not found:
        raise PassFailed(
            f"{label} does not exist in Keystone yet; create it (for example with a "
            f"{kind.capitalize()} resource) — retrying"
        )
    return found[0]


async def domain_id(name: str) -> str:
    return (await require("domain", f"domain {name!r}", name)).id


async def ensure(
    kind: io.KeystoneKind, lookup: io.Find, create: dict[str, Any], manage: dict[str, Any]
) -> tuple[io.KeystoneObject, str, list[io.KeystoneObject]]:
    found = await call(io.FIND, lookup, summary=f"find {kind} {lookup.name or ''}")
    if not found:
        obj = await call(
            io.CREATE, io.Create(kind=kind, fields=create | manage, find=lookup), summary=f"create {kind}"
        )
        return obj, "created", []
    obj, dupes = found[0], found[1:]
    drift = {k: v for k, v in manage.items() if v is not None and obj.fields.get(k) != v}
    if drift:
        obj = await call(io.UPDATE, io.Update(kind=kind, id=obj.id, fields=drift), summary=f"update {kind}")
        return obj, "updated", dupes
    return obj, "unchanged", dupes


def ready(message: str) -> Outcome:
    return Outcome(conditions=[ConditionState.of(READY, True, ReadyReason.RECONCILED, message)])


def converged(
    wf: KeystoneEntity[Any, Any], obj: io.KeystoneObject, done: str, what: str, dupes: list[io.KeystoneObject]
) -> Outcome:
    message = f"{done} {what}" if done != "unchanged" else f"{what} is up to date"
    if dupes:
        message += f"; duplicates not adopted: {', '.join(d.id for d in dupes)}"
    wf.k.id = obj.id
    return ready(message)


# --- reconcile, per kind --------------------------------------------------------------------------------


async def reconcile(wf: KeystoneEntity[Any, Any], spec: Any, full: bool) -> Outcome:
    if isinstance(spec, DomainSpec):
        obj, done, dupes = await ensure(
            "domain", io.Find(kind="domain", name=spec.name), {"name": spec.name},
            {"description": spec.description, "enabled": spec.enabled},
        )  # fmt: skip
        return converged(wf, obj, done, f"domain {spec.name}", dupes)
    if isinstance(spec, ProjectSpec | GroupSpec):
        kind: io.KeystoneKind = "project" if isinstance(spec, ProjectSpec) else "group"
        dom = await domain_id(spec.domain)
        manage: dict[str, Any] = {"description": spec.description}
        if isinstance(spec, ProjectSpec):
            manage["enabled"] = spec.enabled
        obj, done, dupes = await ensure(
            kind, io.Find(kind=kind, name=spec.name, filters={"domain_id": dom}),
            {"name": spec.name, "domain_id": dom}, manage,
        )  # fmt: skip
        return converged(wf, obj, done, f"{kind} {spec.name} in domain {spec.domain}", dupes)
    if isinstance(spec, RoleSpec):
        filters = {"domain_id": await domain_id(spec.domain)} if spec.domain else {}
        obj, done, dupes = await ensure(
            "role", io.Find(kind="role", name=spec.name, filters=filters), {"name": spec.name, **filters}, {}
        )
        return converged(wf, obj, done, f"role {spec.name}", dupes)
    if isinstance(spec, ServiceSpec):
        obj, done, dupes = await ensure(
            "service", io.Find(kind="service", name=spec.name, filters={"type": spec.type}),
            {"name": spec.name, "type": spec.type}, {"description": spec.description, "enabled": spec.enabled},
        )  # fmt: skip
        return converged(wf, obj, done, f"service {spec.name} ({spec.type})", dupes)
    if isinstance(spec, UserSpec):
        return await _user(wf, spec, full)
    if isinstance(spec, EndpointSpec):
        return await _endpoint(wf, spec)
    assert isinstance(spec, RoleAssignmentSpec)
    return await _role_assignment(wf, spec)


async def _user(wf: KeystoneEntity[Any, Any], spec: UserSpec, full: bool) -> Outcome:
    ns, ref = wf.st.ref.namespace, spec.password_secret
    secret = io.SecretRef(namespace=ns, name=ref.name, key=ref.key)
    await call(
        kube_io.CHECK_SECRET, SecretKey(namespace=ns, name=ref.name, key=ref.key), summary="check Secret"
    )
    dom = await domain_id(spec.domain)
    default_project = None
    if spec.default_project:
        dp = spec.default_project
        label = f"default project {dp.name!r} in domain {dp.domain!r}"
        default_project = (await require("project", label, dp.name, domain_id=await domain_id(dp.domain))).id
    obj, done, dupes = await ensure(
        "user", io.Find(kind="user", name=spec.name, filters={"domain_id": dom}),
        {"name": spec.name, "domain_id": dom},
        {"description": spec.description, "enabled": spec.enabled, "email": spec.email,
         "default_project_id": default_project},
    )  # fmt: skip
    if done == "created":
        await call(io.SET_PASSWORD, io.SetPassword(user_id=obj.id, secret=secret), summary="set password")
        password = "password set"
    elif full:
        probe = await call(
            io.PROBE_PASSWORD,
            io.Probe(user_id=obj.id, user_name=spec.name, domain_id=dom, secret=secret),
            summary="probe password",
        )
        if probe.outcome == "unauthorized":
            await call(io.SET_PASSWORD, io.SetPassword(user_id=obj.id, secret=secret), summary="set password")
            password = "password updated"
        else:
            password = "password verified"
    else:
        password = "password unchanged"
    result = converged(wf, obj, done, f"user {spec.name} in domain {spec.domain}", dupes)
    result.conditions[0].message += f" ({password})"
    return result


async def _endpoint(wf: KeystoneEntity[Any, Any], spec: EndpointSpec) -> Outcome:
    svc = spec.service
    service = await require("service", f"service {svc.name!r} of type {svc.type!r}", svc.name, type=svc.type)
    if not await find("region", spec.region):
        region = io.Find(kind="region", name=spec.region)
        await call(
            io.CREATE,
            io.Create(kind="region", fields={"id": spec.region}, find=region),
            summary="create region",
        )
    ids: dict[str, str] = {}
    notes: list[str] = []
    for interface, url in sorted((i.value, u) for i, u in spec.urls.items()):
        keys = {"service_id": service.id, "region_id": spec.region, "interface": interface}
        obj, done, dupes = await ensure(
            "endpoint", io.Find(kind="endpoint", filters=keys), keys, {"url": url}
        )
        ids[interface] = obj.id
        if done != "unchanged":
            notes.append(f"{interface} {done}")
        if dupes:
            notes.append(f"{interface} has duplicates {', '.join(d.id for d in dupes)} (adopted {obj.id})")
    wf.k.endpoint_ids = ids
    message = f"endpoints of {svc.name} ({svc.type}) in {spec.region}: {', '.join(sorted(ids))}"
    return ready(message + ("; " + "; ".join(notes) if notes else ""))


async def _role_assignment(wf: KeystoneEntity[Any, Any], spec: RoleAssignmentSpec) -> Outcome:
    role_filters = {"domain_id": await domain_id(spec.role.domain)} if spec.role.domain else {}
    role = await require("role", f"role {spec.role.name!r}", spec.role.name, **role_filters)
    ids: dict[str, str] = {"role_id": role.id}
    subject_spec = spec.user or spec.group
    assert subject_spec is not None
    kind: io.KeystoneKind = "user" if spec.user else "group"
    label = f"{kind} {subject_spec.name!r} in domain {subject_spec.domain!r}"
    subject = await require(kind, label, subject_spec.name, domain_id=await domain_id(subject_spec.domain))
    ids[f"{kind}_id"] = subject.id
    if spec.project:
        label = f"project {spec.project.name!r} in domain {spec.project.domain!r}"
        project = await require(
            "project", label, spec.project.name, domain_id=await domain_id(spec.project.domain)
        )
        grant = io.Grant(**ids, project_id=project.id)
    elif spec.domain:
        grant = io.Grant(**ids, domain_id=await domain_id(spec.domain.name))
    else:
        grant = io.Grant(**ids, system="all")
    previous = wf.k.grant
    if await call(io.CHECK_GRANT, grant, summary="check grant"):
        message = "the grant is in place"
    else:
        await call(io.PUT_GRANT, grant, summary="grant")
        message = "granted"
    wf.k.grant = grant
    if (
        previous
        and previous != grant
        and wf.wants_finalizer(spec)
        and patches.patched("revoke-superseded-grant")
    ):
        await call(io.REVOKE_GRANT, previous, summary="revoke the superseded grant")
    return ready(message)


# --- finalize, per kind ---------------------------------------------------------------------------------


async def finalize(wf: KeystoneEntity[Any, Any], spec: Any) -> None:
    if isinstance(spec, RoleAssignmentSpec):
        if wf.k.grant:
            await call(io.REVOKE_GRANT, wf.k.grant, summary="revoke the recorded grant")
        return
    if isinstance(spec, EndpointSpec):
        for _, endpoint_id in sorted(wf.k.endpoint_ids.items()):
            await call(io.DELETE, io.Delete(kind="endpoint", id=endpoint_id), summary="delete endpoint")
        return
    stored = wf.k.id
    disable = isinstance(spec, DomainSpec) and stored and patches.patched("domain-disable-before-delete")
    if disable and await find("domain", id=stored):
        await call(
            io.UPDATE, io.Update(kind="domain", id=stored, fields={"enabled": False}), summary="disable"
        )
    if stored:
        await call(io.DELETE, io.Delete(kind=wf.KEYSTONE_KIND, id=stored), summary="delete")
