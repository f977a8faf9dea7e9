"""bench/observe.py's ReadyWatch on the project's Kubernetes API emulator (no OpenStack): it sees resources
of several kinds turn Ready from their status writes, and times the last of them at its write."""

from __future__ import annotations

import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import kubernetes
import pytest

from bench.observe import ReadyWatch, ready_at_any_generation, ready_for_its_generation
from devenv.kube.testing import RunningEmulator, run_emulator
from osprov.api import crdgen
from osprov.api.registry import kind_info
from tests.support.osprov import Osprov

NS = "bench-observe"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningEmulator]:
    with run_emulator(tmp_path_factory.mktemp("kube"), crds_dirs=[crdgen.DEFAULT_OUT]) as running:
        yield running


@pytest.fixture(scope="module")
def namespace(emulator: RunningEmulator) -> Osprov:
    api = emulator.api_client()
    kubernetes.client.CoreV1Api(api).create_namespace(kubernetes.client.V1Namespace(metadata={"name": NS}))
    return cast(Osprov, SimpleNamespace(custom=kubernetes.client.CustomObjectsApi(api), namespace=NS))


def create(o: Osprov, kind: str, name: str) -> None:
    info = kind_info(kind)
    body = {
        "apiVersion": info.api_version,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"name": name, "domain": "default"},
    }
    o.custom.create_namespaced_custom_object(info.group, info.version, NS, info.plural, body)


def write_ready(o: Osprov, kind: str, name: str, generation_behind: int = 0) -> None:
    info = kind_info(kind)
    current: Any = o.custom.get_namespaced_custom_object(info.group, info.version, NS, info.plural, name)
    status = {
        "observedGeneration": current["metadata"]["generation"] - generation_behind,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Reconciled",
                "message": "",
                "lastTransitionTime": "2026-12-06T00:00:00Z",
            }
        ],
    }
    o.custom.patch_namespaced_custom_object_status(
        info.group, info.version, NS, info.plural, name, {"status": status}
    )


def test_the_last_resource_is_timed_at_its_status_write(namespace: Osprov) -> None:
    with ReadyWatch(namespace, ["Project", "Group"], ready_for_its_generation) as watch:
        create(namespace, "Project", "p1")
        create(namespace, "Group", "g1")
        write_ready(namespace, "Project", "p1")
        write_ready(namespace, "Group", "g1", generation_behind=1)  # Ready, for an older spec
        with pytest.raises(TimeoutError):
            watch.wait_ready([("Project", "p1"), ("Group", "g1")], "both", deadline_s=1.0)
        assert watch.count() == 1
        before = time.monotonic()
        write_ready(namespace, "Group", "g1")
        last = watch.wait_ready([("Project", "p1"), ("Group", "g1")], "both", deadline_s=30)
        assert before <= last <= time.monotonic()
        assert watch.turned_ready_at[("Project", "p1")] < before  # the earlier write keeps its own time
        assert watch.count() == 2


def test_resources_ready_before_the_watch_are_seen_by_its_first_list(namespace: Osprov) -> None:
    create(namespace, "Project", "p2")
    write_ready(namespace, "Project", "p2", generation_behind=1)
    with ReadyWatch(namespace, ["Project"], ready_at_any_generation) as watch:
        listed_by = time.monotonic()
        assert watch.wait_ready([("Project", "p2")], "p2", deadline_s=5) <= listed_by


def test_a_dead_watch_fails_the_wait_instead_of_waiting_out_its_deadline(namespace: Osprov) -> None:
    broken = cast(Osprov, SimpleNamespace(custom=namespace.custom, namespace="no/such namespace"))
    with (
        pytest.raises(kubernetes.client.ApiException),
        ReadyWatch(broken, ["Project"], ready_at_any_generation),
    ):
        pass  # the thread's error, raised by the entry (a TimeoutError would say it was lost)
