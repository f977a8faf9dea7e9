"""A leadership term signals what it lists and watches; once fenced it signals nothing more."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

from kubernetes import client
from temporalio.common import MetricMeter

from osprov.api.messages import ResourceChange, ResourceRef, SecretChanged
from osprov.api.registry import kind_info
from osprov.bridge.health import BridgeHealth
from osprov.bridge.term import Term
from tests.workflows.harness import eventually

DOMAIN = kind_info("Domain")


class Recorder:
    """A Signaller that records instead of calling Temporal."""

    def __init__(self) -> None:
        self.changes: list[ResourceChange] = []

    async def change(self, change: ResourceChange) -> None:
        self.changes.append(change)

    async def secret(self, ref: ResourceRef, msg: SecretChanged) -> None:
        return None

    async def orphans(
        self, kind: str, namespace: str, present: set[str], may_act: Callable[[], bool]
    ) -> None:
        return None

    def names(self) -> set[str]:
        return {c.ref.name for c in self.changes}


def create_domain(api: client.ApiClient, namespace: str) -> str:
    name = f"d-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": DOMAIN.api_version,
        "kind": "Domain",
        "metadata": {"name": name},
        "spec": {"name": name},
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        DOMAIN.group, DOMAIN.version, namespace, DOMAIN.plural, body
    )
    return name


def term_for(
    api: client.ApiClient, namespace: str, recorder: Recorder, may_signal: Callable[[], bool]
) -> Term:
    return Term(
        kinds=[DOMAIN],
        namespaces=[namespace],
        keystone_name="keystone",
        api=api,
        signaller=recorder,
        may_signal=may_signal,
        health=BridgeHealth("test", window_s=300),
        meter=MetricMeter.noop,
    )


async def test_a_fenced_term_stops_its_watches_and_lanes_at_once(
    api: client.ApiClient, namespace: str
) -> None:
    recorder = Recorder()
    term = term_for(api, namespace, recorder, lambda: True)
    running = asyncio.create_task(term.run())
    first = create_domain(api, namespace)
    await eventually(lambda: first in recorder.names(), "the first domain signalled")
    term.fence()
    running.cancel()
    await eventually(lambda: all(t.done() for t in term.tasks), "every lane ended")
    # At once: fence() shuts the streams down (else a thread would notice at the next bookmark, 5 s here).
    await eventually(lambda: not any(t.is_alive() for t in term.threads), "every watch thread ended", 3)
    assert term.health.watches == {} and not term.health.leading


async def test_once_the_lease_is_past_its_deadline_queued_changes_are_dropped(
    api: client.ApiClient, namespace: str
) -> None:
    recorder, leading = Recorder(), [True]
    term = term_for(api, namespace, recorder, lambda: leading[0])
    running = asyncio.create_task(term.run())
    try:
        first = create_domain(api, namespace)
        await eventually(lambda: first in recorder.names(), "the first domain signalled")
        leading[0] = False  # what Election.may_act() says from valid_until on, before anything noticed
        late = create_domain(api, namespace)
        await eventually(
            lambda: any(k.ref.name == late for k in term.router.known.values()), "the change was routed"
        )
        await eventually(lambda: any(t.done() for t in term.tasks), "its lane stopped instead of signalling")
        assert late not in recorder.names()
    finally:
        term.fence()
        running.cancel()
