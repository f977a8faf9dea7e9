"""What the bridge signals: a change of the spec, the deletion state, our finalizer or one of osprov's own
annotations (pause, reconcile-requested-at); never a status write or someone else's metadata. Watched
through a real term against the emulator, written with the official client."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes import client

from osprov.api.operations import PAUSED, RECONCILE_REQUESTED
from osprov.bridge.routing import Router
from tests.bridge.test_term import DOMAIN, Recorder, create_domain, term_for
from tests.workflows.harness import eventually


def obj(generation: int = 1, annotations: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "uid": "u1",
            "namespace": "ns",
            "name": "d",
            "generation": generation,
            "annotations": annotations or {},
        },
        "spec": {"name": "d"},
        "status": status,
    }


def test_an_osprov_annotation_is_signalled_with_its_value_and_other_metadata_is_not() -> None:
    router = Router()
    assert router.on_object("Domain", obj()) is not None  # first sight
    assert router.on_object("Domain", obj(conditions=[{"type": "Ready"}])) is None  # status only
    assert router.on_object("Domain", obj(annotations={"team": "a"})) is None  # someone else's
    paused = router.on_object("Domain", obj(annotations={PAUSED: "true", "team": "a"}))
    assert paused is not None and paused.annotations == {PAUSED: "true"}
    assert router.on_object("Domain", obj(annotations={PAUSED: "true", "team": "b"})) is None
    asked = router.on_object("Domain", obj(annotations={PAUSED: "true", RECONCILE_REQUESTED: "1"}))
    assert asked is not None and asked.annotations == {PAUSED: "true", RECONCILE_REQUESTED: "1"}
    again = router.on_object("Domain", obj(annotations={PAUSED: "true", RECONCILE_REQUESTED: "2"}))
    assert again is not None and again.annotations[RECONCILE_REQUESTED] == "2"
    resumed = router.on_object("Domain", obj(annotations={RECONCILE_REQUESTED: "2"}))
    assert resumed is not None and resumed.annotations == {RECONCILE_REQUESTED: "2"}


def test_a_later_annotation_change_supersedes_at_the_same_generation() -> None:
    router = Router()
    first = router.on_object("Domain", obj())
    paused = router.on_object("Domain", obj(annotations={PAUSED: "true"}))
    assert first is not None and paused is not None
    assert paused.supersedes(first) and not first.supersedes(first)


async def test_annotating_a_resource_reaches_its_workflow_and_a_status_write_does_not(
    api: client.ApiClient, namespace: str
) -> None:
    recorder = Recorder()
    term = term_for(api, namespace, recorder, lambda: True)
    running = asyncio.create_task(term.run())
    custom = client.CustomObjectsApi(api)

    def patch(body: dict[str, Any], status: bool = False) -> None:
        write = (
            custom.patch_namespaced_custom_object_status if status else custom.patch_namespaced_custom_object
        )
        write(DOMAIN.group, DOMAIN.version, namespace, DOMAIN.plural, name, body)

    try:
        name = create_domain(api, namespace)
        await eventually(lambda: name in recorder.names(), "the domain signalled")
        patch({"status": {"conditions": []}}, status=True)
        patch({"metadata": {"labels": {"team": "a"}, "annotations": {"team": "a"}}})
        patch({"metadata": {"annotations": {PAUSED: "true"}}})
        await eventually(lambda: any(c.annotations for c in recorder.changes), "the pause signalled")
        signalled = [c.annotations for c in recorder.changes]
        assert signalled == [{}, {PAUSED: "true"}]  # neither the status nor the label/annotation
    finally:
        term.fence()
        running.cancel()
