"""deploy/rbac.yaml against the API calls a real worker and bridge make, both ways (tests/deploy/rbac.py):
nothing is called that the Roles do not grant, and nothing is granted that no call uses. The bridge asks
for Secrets as metadata only (PartialObjectMetadata) and so never receives their data.

The calls come from the emulator's audit log of this module's run: a Domain and a User with
deletionPolicy delete (finalizers added and removed, status written, a password Secret read, Events
recorded) with the bridge watching every kind and holding its Lease. The Domain is paused, changed, resumed
and paused again on the way (issue 15): nothing reaches Keystone while it is paused, and the second pause
is the same Event again, so its series is patched (the Events grant's second verb).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from devenv.kube.testing import RunningEmulator
from devenv.testing import StackEnv
from osprov.api.operations import PAUSED
from tests.deploy import rbac
from tests.support.osprov import Osprov, admin_connection, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def osprov(
    identity_stack: StackEnv, emulator: RunningEmulator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Osprov]:
    yield from run_osprov(
        identity_stack, tmp_path_factory.mktemp("rbac"), kubeconfig=Path(emulator.kubeconfig)
    )


def audit_lines(emulator: RunningEmulator) -> list[dict[str, Any]]:
    text = emulator.audit.read_text()  # type: ignore[attr-defined]
    return [x for x in map(json.loads, text.splitlines()) if x["user_agent"].startswith("osprov-")]


def calls_like(emulator: RunningEmulator, verb: str, resource: str) -> list[dict[str, Any]]:
    return [x for x in audit_lines(emulator) if x["verb"] == verb and x["resource"] == resource]


def events_about(osprov: Osprov, name: str) -> list[client.EventsV1Event]:
    listed = client.EventsV1Api(osprov.kube).list_namespaced_event(osprov.namespace)
    return [e for e in listed.items if e.regarding is not None and e.regarding.name == name]


def series_count(event: client.EventsV1Event) -> int:
    return event.series.count if event.series is not None else 1


def pause_and_resume(osprov: Osprov, name: str) -> None:
    """Paused: a spec change reaches nothing; resumed: it converges; paused again: the same Event, count 2."""
    osprov.wait_ready("Domain", "rbac-domain")
    osprov.annotate("Domain", "rbac-domain", {PAUSED: "true"})
    osprov.apply("Domain", "rbac-domain", {"name": name, "deletionPolicy": "delete", "description": "later"})
    wait_for(
        lambda: (
            (osprov.condition("Domain", "rbac-domain") or {}).get("reason") == "Paused"
            and "generation 2 is not applied"
            in (osprov.condition("Domain", "rbac-domain") or {}).get("message", "")
        ),
        "the Domain paused with generation 2 pending",
    )
    conn = admin_connection(osprov.stack)
    assert conn.identity.find_domain(name).description != "later"  # type: ignore[union-attr]
    osprov.annotate("Domain", "rbac-domain", {PAUSED: None})
    osprov.wait_ready("Domain", "rbac-domain", generation=2)
    assert conn.identity.find_domain(name).description == "later"  # type: ignore[union-attr]
    conn.close()
    osprov.annotate("Domain", "rbac-domain", {PAUSED: "true"})
    wait_for(
        lambda: [series_count(e) for e in events_about(osprov, "rbac-domain") if e.reason == "Paused"] == [2],
        "the second pause patched the first pause's Event",
    )
    reasons = [e.reason for e in events_about(osprov, "rbac-domain")]
    assert reasons[0] == "Created" and "Paused" in reasons, reasons
    osprov.annotate("Domain", "rbac-domain", {PAUSED: None})


def identity_secret_written(osprov: Osprov, emulator: RunningEmulator, domain: str) -> None:
    """An Identity in the test's domain: its credential Secret created, then patched when a full pass finds
    it tampered with (the worker's create and patch of Secrets); deleted before its domain goes."""
    mapping = {"roles": ["member"], "namespaces": {osprov.namespace: {"domain": domain, "any_project": True}}}
    Path(osprov.worker.env["OSPROV_TENANCY_FILE"]).write_text(yaml.safe_dump(mapping))
    osprov.apply("Identity", "rbac-identity", {})
    secret = osprov.wait_ready("Identity", "rbac-identity")["status"]["secretName"]
    osprov.create_secret(secret, {"OS_APPLICATION_CREDENTIAL_ID": "tampered"})
    osprov.apply("Identity", "rbac-identity", {"credential": {"overlap": "6m"}})  # a full pass reads it
    osprov.wait_ready("Identity", "rbac-identity", generation=2)
    wait_for(lambda: calls_like(emulator, "patch", "secrets"), "the Secret re-published")
    osprov.delete("Identity", "rbac-identity")
    wait_for(lambda: osprov.get("Identity", "rbac-identity") is None, "Identity deleted", 60)


def test_every_call_is_granted_and_every_grant_is_used(osprov: Osprov, emulator: RunningEmulator) -> None:
    name = f"rbac-{uuid.uuid4().hex[:8]}"
    osprov.create_secret("rbac-pw", {"OS_PASSWORD": "rbac-test-password-1"})
    osprov.apply("Domain", "rbac-domain", {"name": name, "deletionPolicy": "delete"})
    pause_and_resume(osprov, name)
    user = {"name": name, "domain": name, "deletionPolicy": "delete", "passwordSecret": {"name": "rbac-pw"}}
    osprov.apply("User", "rbac-user", user)
    osprov.wait_ready("User", "rbac-user")
    identity_secret_written(osprov, emulator, name)
    osprov.delete("User", "rbac-user")  # first: the domain must be empty before it goes
    wait_for(
        lambda: osprov.get("User", "rbac-user") is None, "User deleted (finalizer removed by the worker)"
    )
    osprov.delete("Domain", "rbac-domain")
    wait_for(lambda: osprov.get("Domain", "rbac-domain") is None, "Domain deleted (finalizer removed)")
    conn = admin_connection(osprov.stack)
    assert conn.identity.find_domain(name) is None  # type: ignore[union-attr] # v3, as everywhere here
    conn.close()
    # The bridge renews its Lease every retryPeriod: by now it has created, read and updated it.
    wait_for(lambda: calls_like(emulator, "update", "leases"), "a Lease renewal in the audit log")
    calls = [rbac.call_of(line) for line in audit_lines(emulator)]
    assert rbac.denied(calls) == []
    # The region inventory's grants are used only with an InventoryConfig and a cloud to list:
    # tests/integration/test_inventory.py checks them, both ways, on its own audit log.
    assert rbac.unused(calls, only=lambda g: not g.inventory) == []


def test_the_bridge_reads_secrets_as_metadata_only(osprov: Osprov, emulator: RunningEmulator) -> None:
    wait_for(lambda: calls_like(emulator, "watch", "secrets"), "the bridge watches Secrets")
    secret_calls = [x for x in audit_lines(emulator) if x["resource"] == "secrets" and x["verb"] != "get"]
    # Only the bridge lists and watches them; the worker only writes an Identity's own Secret.
    secret_reads = [x for x in secret_calls if x["user_agent"].startswith("osprov-bridge")]
    assert {x["verb"] for x in secret_reads} == {"list", "watch"}
    assert {x["verb"] for x in secret_calls if x not in secret_reads} <= {"create", "patch"}
    for x in secret_reads:
        wanted = "PartialObjectMetadataList" if x["verb"] == "list" else "PartialObjectMetadata"
        assert x["as"] == wanted, x
