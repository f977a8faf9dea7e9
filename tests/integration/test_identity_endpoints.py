"""Services and Endpoints on the real Keystone, the CRD's rejections, and a worker killed mid-create.

Every service name, type and region is unique per run (Keystone outlives runs, and the stack's own
catalog must never be touched). Outcomes are read from Keystone with an independent admin client.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from openstack.identity.v3._proxy import Proxy as Identity

from devenv.testing import StackEnv
from osprov.api.registry import kind_info
from tests.integration.test_identity_support import (
    entity_state,
    identity_client,
    ready_status,
    status_of,
    uniq,
    wait_condition,
)
from tests.support.osprov import Osprov, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def osprov(identity_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    yield from run_osprov(identity_stack, tmp_path_factory.mktemp("identity-endpoints"), resync_seconds=2)


@pytest.fixture(scope="module")
def ks(identity_stack: StackEnv) -> Iterator[Identity]:
    yield from identity_client(identity_stack)


@pytest.fixture(scope="module")
def cleanup(ks: Identity) -> Iterator[list[tuple[str, str]]]:
    """(kind, id) of Keystone objects outside any domain, removed at module end (endpoints first)."""
    made: list[tuple[str, str]] = []
    yield made
    order = {"endpoint": 0, "service": 1, "region": 2}
    for kind, object_id in sorted(made, key=lambda m: order[m[0]]):
        getattr(ks, f"delete_{kind}")(object_id, ignore_missing=True)


def endpoints_of(ks: Identity, service_id: str, region: str) -> dict[str, list[Any]]:
    """Keystone's endpoints of a service in a region, by interface, each list sorted by ID."""
    found: dict[str, list[Any]] = {}
    for e in sorted(ks.endpoints(service_id=service_id, region_id=region), key=lambda e: e.id):
        if e.service_id == service_id and e.region_id == region:
            found.setdefault(e.interface, []).append(e)
    return found


def services_named(ks: Identity, name: str, type_: str) -> list[Any]:
    return [s for s in ks.services(name=name) if s.name == name and s.type == type_]


def declare(
    osprov: Osprov, cleanup: list[tuple[str, str]], name: str, urls: dict[str, str]
) -> tuple[str, str]:
    """A Service and its Endpoint resource in a fresh region; returns (service ID, region)."""
    service_type, region = uniq("type"), uniq("region")
    osprov.apply("Service", name, {"name": name, "type": service_type})
    service_id = str(ready_status(osprov, "Service", name)["serviceID"])
    cleanup += [("service", service_id), ("region", region)]
    osprov.apply(
        "Endpoint", name, {"service": {"name": name, "type": service_type}, "region": region, "urls": urls}
    )
    return service_id, region


def test_only_declared_interfaces_are_published_in_a_region_created_for_them(
    osprov: Osprov, ks: Identity, cleanup: list[tuple[str, str]]
) -> None:
    name = uniq("svc")
    urls = {"public": "http://pub.example:8776/v3", "internal": "http://int.example:8776/v3"}
    service_id, region = declare(osprov, cleanup, name, urls)
    status = ready_status(osprov, "Endpoint", name)
    found = endpoints_of(ks, service_id, region)
    cleanup += [("endpoint", e.id) for es in found.values() for e in es]
    assert ks.get_region(region).id == region
    assert sorted(found) == ["internal", "public"], "an omitted interface was published"
    assert {i: es[0].url for i, es in found.items()} == urls
    assert status["endpointIDs"] == {i: es[0].id for i, es in found.items()}


def test_url_change_is_a_patch_that_keeps_the_id_and_hand_edits_are_reverted(
    osprov: Osprov, ks: Identity, cleanup: list[tuple[str, str]]
) -> None:
    name = uniq("svc")
    service_id, region = declare(osprov, cleanup, name, {"public": "http://v1.example/"})
    first = ready_status(osprov, "Endpoint", name)["endpointIDs"]["public"]
    cleanup.append(("endpoint", first))
    osprov.apply("Endpoint", name, {"urls": {"public": "http://v2.example/"}})
    second = ready_status(osprov, "Endpoint", name, generation=2)["endpointIDs"]["public"]
    assert second == first and ks.get_endpoint(first).url == "http://v2.example/"
    before = entity_state(osprov, "Endpoint", name)
    assert before["resync_at"] is None  # converged: no timer of its own, the Keystone sweep checks it
    ks.update_endpoint(first, url="http://edited-by-hand.example/")
    wait_for(lambda: ks.get_endpoint(first).url == "http://v2.example/", "the sweep patches the URL back", 60)
    assert [e.id for e in endpoints_of(ks, service_id, region)["public"]] == [first]
    # Repaired by the endpoint's own workflow, which the sweep woke; the resource's answer did not change,
    # so its workflow ran no pass and wrote nothing.
    assert entity_state(osprov, "Endpoint", name)["passes"] == before["passes"]


def test_duplicates_adopt_the_lowest_id_are_named_and_nothing_is_deleted(
    osprov: Osprov, ks: Identity, cleanup: list[tuple[str, str]]
) -> None:
    name, service_type, region = uniq("dup"), uniq("type"), uniq("region")
    service = ks.create_service(name=name, type=service_type)
    ks.create_region(id=region)
    cleanup += [("service", service.id), ("region", region)]
    made = [
        ks.create_endpoint(service_id=service.id, region_id=region, interface="public", url=f"http://d{i}/")
        for i in range(2)
    ]
    cleanup += [("endpoint", e.id) for e in made]
    lowest, other = sorted(e.id for e in made)
    osprov.apply("Service", name, {"name": name, "type": service_type})
    osprov.apply(
        "Endpoint",
        name,
        {
            "service": {"name": name, "type": service_type},
            "region": region,
            "urls": {"public": "http://wanted/"},
        },
    )
    status = ready_status(osprov, "Endpoint", name)
    assert status["endpointIDs"] == {"public": lowest}
    cond = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert other in cond["message"]
    assert cond["reason"] == "Adopted" and "url" in cond["message"]  # made by hand: read, never rewritten
    found = endpoints_of(ks, service.id, region)["public"]
    assert [e.id for e in found] == [lowest, other], "a duplicate was deleted or another made"
    assert ks.get_endpoint(lowest).url in ("http://d0/", "http://d1/")
    assert ready_status(osprov, "Service", name)["serviceID"] == service.id  # adopted, not duplicated


def test_worker_killed_while_services_and_endpoints_are_created_duplicates_nothing(
    osprov: Osprov, ks: Identity, cleanup: list[tuple[str, str]]
) -> None:
    urls = {"admin": "http://a.example/", "internal": "http://i.example/", "public": "http://p.example/"}
    declared = [(uniq("crash"), uniq("type"), uniq("region")) for _ in range(4)]
    for name, service_type, region in declared:
        cleanup.append(("region", region))
        osprov.apply("Service", name, {"name": name, "type": service_type})
        osprov.apply(
            "Endpoint",
            name,
            {"service": {"name": name, "type": service_type}, "region": region, "urls": urls},
        )
    # kill -9 as soon as the first endpoint landed: other creates are in flight or queued.
    wait_for(
        lambda: any(_endpoints_by_name(ks, n, t, r) for n, t, r in declared), "a first endpoint", 120, 0.05
    )
    osprov.worker.kill()
    osprov.worker.start()
    for name, service_type, region in declared:
        status = ready_status(osprov, "Endpoint", name, timeout_s=180)
        assert "endpointIDs" in status, f"Ready without endpointIDs: {status}"
        ids = status["endpointIDs"]
        services = services_named(ks, name, service_type)
        cleanup += [("service", s.id) for s in services]
        assert len(services) == 1, f"{name}: {len(services)} services"
        found = endpoints_of(ks, services[0].id, region)
        cleanup += [("endpoint", e.id) for es in found.values() for e in es]
        assert {i: [e.id for e in es] for i, es in found.items()} == {i: [ids[i]] for i in urls}


def _endpoints_by_name(ks: Identity, name: str, service_type: str, region: str) -> bool:
    return any(endpoints_of(ks, s.id, region) for s in services_named(ks, name, service_type))


# ----- the CRD rejects malformed resources (applied through the kubernetes client) ---------------

MALFORMED: dict[str, tuple[str, dict[str, Any], str]] = {
    "both subjects": (
        "RoleAssignment",
        {
            "role": {"name": "r"},
            "user": {"name": "u", "domain": "d"},
            "group": {"name": "g", "domain": "d"},
            "domain": {"name": "d"},
        },
        "set exactly one subject",
    ),
    "no scope": (
        "RoleAssignment",
        {"role": {"name": "r"}, "user": {"name": "u", "domain": "d"}},
        "set exactly one scope",
    ),
    "bad duration": (
        "Domain",
        {"name": "d", "retryInterval": "five minutes"},
        "retryInterval",
    ),
    "unknown interface": (
        "Endpoint",
        {"service": {"name": "s", "type": "t"}, "region": "r", "urls": {"private": "http://x/"}},
        "admin, internal or public",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_resource_is_rejected_by_the_crd(osprov: Osprov, case: str) -> None:
    kind, spec, message = MALFORMED[case]
    info = kind_info(kind)
    name = uniq("bad")
    body = {"apiVersion": info.api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}
    with pytest.raises(ApiException) as err:
        osprov.custom.create_namespaced_custom_object(
            info.group, info.version, osprov.namespace, info.plural, body
        )
    assert err.value.status == 422 and message in str(err.value.body)
    assert osprov.get(kind, name) is None


def test_endpoint_of_a_missing_service_waits_and_writes_nothing(osprov: Osprov, ks: Identity) -> None:
    name, service_type, region = uniq("absent"), uniq("type"), uniq("region")
    osprov.apply(
        "Endpoint",
        "absent",
        {
            "service": {"name": name, "type": service_type},
            "region": region,
            "urls": {"public": "http://nowhere/"},
        },
    )
    cond = wait_condition(
        osprov, "Endpoint", "absent", lambda c: c["status"] == "False", "reports the service"
    )
    assert f"service '{name}'" in cond["message"]
    assert list(ks.regions()) and region not in {r.id for r in ks.regions()}
    assert not status_of(osprov, "Endpoint", "absent").get("endpointIDs")
