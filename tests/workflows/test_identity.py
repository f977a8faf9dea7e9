"""The Identity workflow and the tenancy step of the cloud kinds on the time-skipping server (stubbed
Keystone, Kubernetes, Cinder, tenancy mapping): the decisions of workflows/identity_decisions.py executed,
the use protocol (a Volume acts on its Identity's credential) and the deletion guard.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from osprov.api import cinder_io, keystone_io
from osprov.api import identity_io as io
from osprov.api.identity import IDENTITY_GROUP, object_name
from tests.workflows.fakes_cinder import FINALIZER as VOLUME_FINALIZER
from tests.workflows.fakes_cinder import CinderHarness, cinder_harness
from tests.workflows.fakes_identity import ROLES

FINALIZER = f"{IDENTITY_GROUP}/finalizer"
ID_UID = "1d000000-0000-4000-8000-000000000001"
VOL_UID = "5e1f0c3a-0000-4000-8000-000000000002"
IDENTITY: dict[str, Any] = {"credential": {"lifetime": "720h"}}
VOLUME: dict[str, Any] = {"identityRef": {"name": "team"}, "size": 1, "deletionPolicy": "delete"}


@pytest_asyncio.fixture
async def h(tenv: WorkflowEnvironment) -> AsyncIterator[CinderHarness]:
    async for hs in cinder_harness(tenv):
        dom = hs.cloud.add("domain", name="tenants", enabled=True)
        assert dom.id
        for role in ROLES:
            hs.cloud.add("role", name=role)
        yield hs


def written(h: CinderHarness, uid: str) -> dict[str, Any]:
    return h.cloud.status_by_uid.get(uid, {})


def condition(h: CinderHarness, uid: str) -> dict[str, Any]:
    return next(iter(written(h, uid).get("conditions", [])), {})


async def ready_identity(h: CinderHarness) -> Any:
    h.cloud.identity.identities[("ns", "team")] = ID_UID
    wf = await h.apply("Identity", IDENTITY, name="team", uid=ID_UID)
    await h.until(lambda: condition(h, ID_UID).get("reason") == "Provisioned", "identity ready")
    return wf


async def test_identity_makes_project_user_grants_and_one_credential_in_its_domain(h: CinderHarness) -> None:
    await ready_identity(h)
    [project] = [p for p in h.cloud.of("project") if p.fields.get("name") == object_name(ID_UID)]
    [user] = [u for u in h.cloud.of("user") if u.fields.get("name") == object_name(ID_UID)]
    assert len(h.cloud.grants) == len(ROLES)
    [(cid, issued)] = h.cloud.identity.issued.items()
    assert issued.project_id == project.id and issued.user_id == user.id and issued.roles == ROLES
    status = written(h, ID_UID)
    assert status["projectID"] == project.id and status["credentialID"] == cid
    assert status["domain"] == "tenants" and status["secretName"] == "team-openstack"


async def test_i0_unmapped_namespace_is_forbidden_before_any_keystone_write(h: CinderHarness) -> None:
    h.cloud.identity.domain = None
    await h.apply("Identity", IDENTITY, name="team", uid=ID_UID)
    await h.until(lambda: bool(condition(h, ID_UID)), "identity reported")
    ready = condition(h, ID_UID)
    assert ready["status"] == "False" and ready["reason"] == "Forbidden", ready
    assert h.cloud.count(keystone_io.CREATE.name) == 0 and not h.cloud.identity.issued


async def test_t1_unmapped_spec_project_is_forbidden_with_no_cloud_call(h: CinderHarness) -> None:
    """The old behaviour: spec.project was free text and the volume was made in it."""
    h.cinder.add_project("other-team", "Default")
    h.cloud.identity.refused_projects.add(("ns", "other-team", "Default"))
    spec = {"project": {"name": "other-team", "domain": "Default"}, "size": 1, "deletionPolicy": "delete"}
    volume = await h.apply("Volume", spec, name="data", uid=VOL_UID)
    await h.until(lambda: bool(condition(h, VOL_UID)), "volume reported")
    available = condition(h, VOL_UID)
    assert available["status"] == "False" and available["reason"] == "Forbidden", available
    # Its delete is done without a call either (a refused resource never holds its finalizer forever).
    await h.signal(volume, 1, spec, deleting=True, finalizers=[VOLUME_FINALIZER])
    await volume.result()
    assert h.cinder.calls == [] and h.cinder.volumes == {}


async def test_volume_acts_on_its_identity_credential_and_holds_its_deletion(h: CinderHarness) -> None:
    identity = await ready_identity(h)
    h.cinder.add_project(object_name(ID_UID), "tenants")  # the Identity's project, as Keystone has it
    h.cloud.identity.resources[("Volume", "data")] = VOL_UID
    volume = await h.apply("Volume", VOLUME, name="data", uid=VOL_UID)
    await h.until(lambda: condition(h, VOL_UID).get("reason") == "Provisioned", "volume provisioned")
    [vol] = h.cinder.volumes.values()
    [cid] = h.cloud.identity.issued
    assert vol.scope.credential is not None and vol.scope.credential.secret == "team-openstack"
    assert vol.scope.project == object_name(ID_UID) and vol.scope.domain == "tenants"
    assert written(h, ID_UID)["users"] == ["Volume/data"]

    # X2: deleting the Identity waits while the volume uses it; nothing is revoked.
    await h.signal(identity, 1, IDENTITY, deleting=True, finalizers=[FINALIZER])
    await h.until(lambda: condition(h, ID_UID).get("reason") == "InUse", "deletion guard")
    assert "Volume/data" in condition(h, ID_UID)["message"] and h.cloud.identity.revoked == []

    # The volume goes (on the credential), releases the Identity, which then revokes and deletes it all.
    await h.signal(volume, 1, VOLUME, deleting=True, finalizers=[VOLUME_FINALIZER])
    await volume.result()
    del h.cloud.identity.resources[("Volume", "data")]
    assert all(v.deleted for v in h.cinder.volumes.values()) or not h.cinder.volumes
    await identity.result()
    assert h.cloud.identity.revoked == [cid]
    assert not [p for p in h.cloud.of("project") if p.fields.get("name") == object_name(ID_UID)]
    assert not [u for u in h.cloud.of("user") if u.fields.get("name") == object_name(ID_UID)]


async def test_t4_volume_of_a_missing_identity_waits_and_its_delete_short_circuits(h: CinderHarness) -> None:
    volume = await h.apply("Volume", VOLUME, name="data", uid=VOL_UID)
    await h.until(lambda: bool(condition(h, VOL_UID)), "volume reported")
    assert "Identity team does not exist" in condition(h, VOL_UID)["message"]
    await h.signal(volume, 1, VOLUME, deleting=True, finalizers=[VOLUME_FINALIZER])
    await volume.result()
    assert h.cinder.calls == [] and h.cloud.identity.count(io.FIND_IDENTITY.name) >= 2
    assert cinder_io.FIND_VOLUMES.name not in h.cinder.calls


async def test_x6_an_identity_with_a_key_deletes_its_keypair_before_revoking_its_credential(
    h: CinderHarness,
) -> None:
    h.cloud.identity.identities[("ns", "team")] = ID_UID
    keyed = IDENTITY | {"sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv7kL6hWmzTP1n9qDP1o2T0bUZ1 me"}
    identity = await h.apply("Identity", keyed, name="team", uid=ID_UID)
    await h.until(lambda: condition(h, ID_UID).get("reason") == "Provisioned", "identity ready")
    [cid] = h.cloud.identity.issued
    await h.signal(identity, 1, keyed, deleting=True, finalizers=[FINALIZER])
    await identity.result()
    assert h.cloud.identity.keypairs_deleted == [(ID_UID, cid)] and h.cloud.identity.revoked == [cid]
    calls = h.cloud.identity.calls
    assert calls.index(io.DELETE_KEYPAIR.name) < calls.index(io.REVOKE_CREDENTIAL.name)


async def test_x6_an_identity_without_a_key_deletes_no_keypair(h: CinderHarness) -> None:
    identity = await ready_identity(h)
    await h.signal(identity, 1, IDENTITY, deleting=True, finalizers=[FINALIZER])
    await identity.result()
    assert h.cloud.identity.keypairs_deleted == [] and h.cloud.identity.revoked != []
