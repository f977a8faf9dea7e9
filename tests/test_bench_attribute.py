"""bench/attribute.py: a py-spy profile's samples go to the innermost frame that is not the standard library."""

from __future__ import annotations

from bench.attribute import STDLIB, attribute, owner

# osprov's `main` runs the loop: what the loop dispatches is not osprov's for that.
LOOP = "main (worker/__main__.py:40);BaseEventLoop._run_once (asyncio/base_events.py:1922)"


def test_owner_by_path() -> None:
    assert owner("_claim (workflows/keystone/common.py:204)") == "osprov"
    assert owner("create (activities/keystone.py:144)") == "osprov"
    assert owner("main (/work/checkout/osprov/cli.py:12)") == "osprov"
    assert owner("_handle_activation (temporalio/worker/_workflow.py:301)") == "temporalio (Python layer)"
    assert owner("request (keystoneauth1/session.py:900)") == "openstacksdk + keystoneauth1"
    assert owner("HTTPConnection.send (http/client.py:1000)") == "HTTP (requests, urllib3, http.client)"
    assert owner("select (selectors.py:468)") is None
    assert owner("<module> (<frozen runpy>)") is None


def test_innermost_owned_frame_takes_the_sample() -> None:
    lines = [
        # osprov's activity calling the HTTP stack: the HTTP stack's sample
        f"{LOOP};create (activities/keystone.py:144);HTTPConnection.send (http/client.py:1000) 5\n",
        # temporalio calling json (standard library): temporalio's
        f"{LOOP};_handle_activation (temporalio/worker/_workflow.py:301);dumps (json/__init__.py:231) 3\n",
        # the workflow's own code: osprov's
        f"{LOOP};_handle_activation (temporalio/worker/_workflow.py:301);_claim (workflows/keystone/common.py:204) 2\n",
        # only the event loop
        f"{LOOP};select (selectors.py:468) 4\n",
        f"{LOOP};Handle._run (asyncio/events.py:84);_call_set_state (asyncio/futures.py:380) 1\n",
        "\n",
    ]
    shares, total = attribute(lines)
    assert total == 15
    assert shares == {
        "HTTP (requests, urllib3, http.client)": 5,
        "temporalio (Python layer)": 3,
        "osprov": 2,
        STDLIB: 5,
    }
