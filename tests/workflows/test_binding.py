"""managementPolicy and import on the Keystone kinds (workflows/keystone/binding.py): an unmanaged resource
only observes, an import never creates and writes only what the ownership table allows. Time-skipping
server, stubbed activities, the production workflows."""

from __future__ import annotations

from typing import Any

import pytest

from osprov.api import keystone_io as io
from osprov.api import sweep as sw
from tests.workflows.harness import Harness, eventually
from tests.workflows.test_ownership import FINALIZER, ready

UNMANAGED = {"managementPolicy": "unmanaged"}


def writes(h: Harness) -> int:
    return h.cloud.count(io.CREATE.name) + h.cloud.count(io.UPDATE.name) + h.cloud.count(io.DELETE.name)


async def reason(h: Harness, wf: Any, wanted: str) -> dict[str, Any]:
    await eventually(lambda: h.ready_of(wf).get("reason") == wanted, wanted)
    return await ready(h, wf)


async def test_unmanaged_mirrors_an_existing_object_and_leaves_it_when_deleted(h: Harness) -> None:
    h.cloud.add("domain", name="prod", description="theirs", enabled=True)
    spec = {"name": "prod", "description": "mine"} | UNMANAGED
    wf = await h.apply("Domain", spec)
    cond = await reason(h, wf, "Observed")
    assert cond["status"] == "True"
    assert (
        "never writes or deletes it" in cond["message"]
        and "differs from the spec: description" in cond["message"]
    )
    await h.env.sleep(601)  # the sweep's scan neither repairs the drift (it is the observed state)
    await eventually(lambda: h.cloud.count(sw.SCAN.name) >= 1, "the sweep looked again")
    await h.signal(wf, 1, spec, deleting=True)
    assert await wf.result() == "deleted"
    assert h.cloud.of("domain")[0].fields["description"] == "theirs"
    assert writes(h) == 0 and h.cloud.count("kube.add_finalizer") == 0


async def test_unmanaged_never_creates_and_observes_the_object_once_it_exists(h: Harness) -> None:
    wf = await h.apply("Domain", {"name": "later"} | UNMANAGED)
    cond = await ready(h, wf)
    assert cond["status"] == "False" and "never creates it" in cond["message"]
    h.cloud.add("domain", name="later", enabled=True)  # someone outside osprov creates it
    await h.until(
        lambda: h.written[wf.id]["conditions"][0]["reason"] == "Observed", "observed", virtual_s=120
    )
    assert writes(h) == 0


async def test_an_import_by_a_wrong_id_is_an_error_that_names_the_field(h: Harness) -> None:
    h.cloud.add("domain", name="prod", enabled=True)
    wf = await h.apply("Domain", {"name": "prod", "import": {"id": "no-such-id"}})
    cond = await ready(h, wf)
    assert cond["status"] == "False" and "fix import.id" in cond["message"]
    assert writes(h) == 0


async def test_a_managed_import_writes_only_what_the_operator_allow_lists(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = h.cloud.add("domain", name="prod", description="theirs", enabled=True)
    legacy = h.cloud.add("domain", name="legacy", description="old", enabled=True)
    refused = await h.apply(
        "Domain", {"name": "prod", "description": "mine", "import": {"id": theirs.id}}, name="a"
    )
    cond = await reason(h, refused, "ImportNotAllowed")
    assert cond["status"] == "False" and "OSPROV_OWNERSHIP_ALLOW" in cond["message"]
    monkeypatch.setenv("OSPROV_OWNERSHIP_ALLOW", "domain/legacy*")
    spec = {"name": "legacy", "description": "new", "deletionPolicy": "delete", "import": {"filter": {}}}
    allowed = await h.apply("Domain", spec, name="b", finalizers=[FINALIZER])
    assert (await reason(h, allowed, "Reconciled"))["status"] == "True"
    assert h.cloud.objects["domain"][legacy.id].fields["description"] == "new"
    assert h.cloud.objects["domain"][theirs.id].fields["description"] == "theirs"
    assert h.cloud.count(io.CREATE.name) == 0
