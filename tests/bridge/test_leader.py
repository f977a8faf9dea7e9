"""Leader election on a real coordination.k8s.io/v1 Lease (the emulator, through the official client).

Expiry is judged on each candidate's own clock, so those tests give the candidates a clock of their own
and move it; the fencing tests run on real time and assert safety (the leader stopped before another
could take over), not speed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kubernetes import client

from devenv.kube.testing import RunningEmulator
from osprov.bridge.leader import Election, ElectionConfig, LeaseLock

NAME = "osprov-bridge"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def candidate(api: client.ApiClient, namespace: str, identity: str, clock: Clock | None = None) -> LeaseLock:
    config = ElectionConfig(namespace=namespace, name=NAME, identity=identity)
    return LeaseLock(api, config, clock or Clock())


def lease(api: client.ApiClient, namespace: str) -> client.V1LeaseSpec:
    spec = client.CoordinationV1Api(api).read_namespaced_lease(NAME, namespace).spec
    assert spec is not None
    return spec


def test_the_first_candidate_creates_the_lease_and_the_next_one_follows(
    api: client.ApiClient, namespace: str
) -> None:
    a, b = candidate(api, namespace, "a"), candidate(api, namespace, "b")
    assert a.try_acquire_or_renew() and a.is_leader()
    spec = lease(api, namespace)
    assert (spec.holder_identity, spec.lease_duration_seconds, spec.lease_transitions) == ("a", 10, 0)
    assert spec.acquire_time == spec.renew_time
    assert not b.try_acquire_or_renew() and b.holder == "a"
    assert a.try_acquire_or_renew()  # a renewal keeps acquireTime and the transition count
    renewed = lease(api, namespace)
    assert renewed.acquire_time == spec.acquire_time and renewed.renew_time > spec.renew_time  # type: ignore[operator]
    assert renewed.lease_transitions == 0


def test_a_follower_takes_over_once_the_record_is_unchanged_for_lease_duration_on_its_own_clock(
    api: client.ApiClient, namespace: str
) -> None:
    clock = Clock()
    a, b = candidate(api, namespace, "a"), candidate(api, namespace, "b", clock)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b observes the record now
    clock.now += 6
    assert a.try_acquire_or_renew()  # a renews: the record changes, b's wait starts again
    assert not b.try_acquire_or_renew()
    clock.now += 9.9
    assert not b.try_acquire_or_renew()
    clock.now += 0.2  # 10.1 s since b saw the last renewal
    assert b.try_acquire_or_renew() and b.is_leader()
    spec = lease(api, namespace)
    assert (spec.holder_identity, spec.lease_transitions) == ("b", 1)
    # The old leader learns it lost at its next attempt, and does not take the Lease back.
    assert not a.try_acquire_or_renew() and a.holder == "b" and not a.is_leader()


def test_of_two_writers_racing_on_one_resource_version_the_second_gets_a_conflict(
    api: client.ApiClient, namespace: str
) -> None:
    clock = Clock()
    a, b = candidate(api, namespace, "a"), candidate(api, namespace, "b", clock)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    clock.now += 11  # b believes the Lease expired …
    replace = b.coordination.replace_namespaced_lease

    def renewal_lands_first(*args: Any, **kwargs: Any) -> client.V1Lease:
        assert a.try_acquire_or_renew()  # … but a renews between b's read and b's write
        return replace(*args, **kwargs)

    b.coordination.replace_namespaced_lease = renewal_lands_first  # type: ignore[method-assign]
    assert not b.try_acquire_or_renew()
    assert lease(api, namespace).holder_identity == "a"


def test_a_released_lease_is_taken_at_the_next_attempt(api: client.ApiClient, namespace: str) -> None:
    a, b = candidate(api, namespace, "a"), candidate(api, namespace, "b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.release()
    spec = lease(api, namespace)
    assert (spec.holder_identity, spec.lease_duration_seconds) == ("", 1)
    assert b.try_acquire_or_renew()  # no waiting for the old record to expire
    assert lease(api, namespace).lease_transitions == 1


async def test_a_leader_that_cannot_renew_stops_acting_before_anyone_may_take_over(
    api: client.ApiClient, emulator: RunningEmulator, namespace: str
) -> None:
    config = ElectionConfig(
        namespace=namespace,
        name=NAME,
        identity="a",
        lease_duration_s=3,
        renew_deadline_s=2,
        retry_period_s=0.5,
    )
    election = Election(LeaseLock(api, config))
    await election.acquire()
    assert election.may_act()
    holding = asyncio.create_task(election.hold())
    # Every Lease write from now on hangs (longer than the whole lease).
    emulator.inject("update", "leases", 0, times=1000, delay_s=5)
    await asyncio.wait_for(holding, timeout=10)
    lost_at = time.monotonic()
    assert not election.may_act()
    # Fenced (hold() returned, may_act() false) before a follower could take the Lease: a follower waits
    # leaseDuration after it saw the last renewal, which was sent at renewed_at at the earliest.
    assert lost_at < election.renewed_at + config.lease_duration_s
    assert election.valid_until == election.renewed_at + config.renew_deadline_s
