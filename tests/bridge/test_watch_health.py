"""A watch's progress and its death reach the bridge's liveness (a watch thread used to die silently
while /metrics kept answering, and a stalled watch looked the same as an idle one)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

from kubernetes import client

from devenv.kube.testing import RunningEmulator
from osprov.api.registry import kind_info
from osprov.bridge.health import BridgeHealth
from osprov.bridge.watch import Obj, Target, Watcher
from tests.support.waiting import wait_for

DOMAIN = kind_info("Domain")


def domain_target(namespace: str) -> Target:
    return Target(DOMAIN.group, DOMAIN.version, DOMAIN.plural, namespace)


def create_domain(api: client.ApiClient, namespace: str) -> None:
    body = {
        "apiVersion": DOMAIN.api_version,
        "kind": "Domain",
        "metadata": {"name": f"d-{uuid.uuid4().hex[:6]}"},
        "spec": {"name": f"d-{uuid.uuid4().hex[:6]}"},
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        DOMAIN.group, DOMAIN.version, namespace, DOMAIN.plural, body
    )


def start_watch(
    api: client.ApiClient,
    target: Target,
    health: BridgeHealth,
    on_event: Callable[[Target, str, Obj], None] = lambda *_: None,
    watch_timeout_s: int = 300,
) -> tuple[Watcher, threading.Thread]:
    health.term_started([str(target)])
    w = Watcher(
        api,
        target,
        lambda *_: None,
        on_event,
        threading.Event(),
        watch_timeout_s=watch_timeout_s,
        on_progress=lambda t, listed: health.progress(str(t), listed),
        on_death=lambda t, error: health.died(str(t), error),
    )
    thread = threading.Thread(target=w.run, daemon=True)
    thread.start()
    return w, thread


def test_a_watch_thread_killed_by_an_unexpected_error_fails_liveness(
    api: client.ApiClient, namespace: str
) -> None:
    health = BridgeHealth("test", window_s=300)

    def consumer_bug(target: Target, kind: str, obj: Obj) -> None:
        raise TypeError("a bug in the consumer")

    watcher, thread = start_watch(api, domain_target(namespace), health, on_event=consumer_bug)
    try:
        wait_for(lambda: health.ready().ok, "the first list")
        assert health.live().ok
        create_domain(api, namespace)
        wait_for(lambda: not thread.is_alive(), "the watch thread ended")
        report = health.live()
        assert not report.ok
        assert report.details["problems"] == [
            f"watch of {domain_target(namespace)} died: TypeError: a bug in the consumer"
        ]
    finally:
        watcher.close()


def test_a_watch_without_progress_fails_liveness_until_it_makes_progress_again(
    api: client.ApiClient, emulator: RunningEmulator, namespace: str
) -> None:
    window = 3.0
    health = BridgeHealth("test", window_s=window)
    target = domain_target(namespace)
    # The server ends each watch request after 1 s: an idle but working watch keeps making progress.
    watcher, _ = start_watch(api, target, health, watch_timeout_s=1)
    try:
        wait_for(lambda: health.ready().ok, "the first list")
        listed_at = health.watches[str(target)].progress_at
        wait_for(
            lambda: health.watches[str(target)].progress_at > listed_at + window,
            "progress reported past the first window while idle",
        )
        assert health.live().ok
        # Every watch and list request fails from now on: no progress.
        emulator.inject("watch", DOMAIN.plural, 500, times=10**6)
        emulator.inject("list", DOMAIN.plural, 500, times=10**6)
        emulator.cut_watches(DOMAIN.plural)
        report = wait_for(lambda: None if (r := health.live()).ok else r, "liveness failed", 30)
        assert report.details["problems"][0].startswith(f"watch of {target} made no progress for ")
        emulator.clear_faults()
        wait_for(lambda: health.live().ok, "liveness back once the watch makes progress", 60)
    finally:
        watcher.close()
