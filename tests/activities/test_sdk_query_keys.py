"""Every filter an activity passes to an openstacksdk listing reaches the cloud or is applied by the SDK.

openstacksdk drops a query key its resource does not know, without a word (`Resource.list` validates with
`allow_unknown_params=True`): `listeners(loadbalancer_id=...)` (Pool's key; Listener's is
`load_balancer_id`) listed every listener of the project, and the create-if-absent check could adopt
another load balancer's listener of the same name. This test reads every listing call in activities/ and
asks the SDK itself what it would keep.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest
from openstack import fields, resource
from openstack.block_storage.v3 import _proxy as block_storage
from openstack.compute.v2 import _proxy as compute
from openstack.identity.v3 import _proxy as identity
from openstack.image.v2 import _proxy as image
from openstack.load_balancer.v2 import _proxy as load_balancer
from openstack.network.v2 import _proxy as network

ACTIVITIES = Path(__file__).resolve().parents[2] / "activities"
PROXIES: dict[str, type] = {
    "block_storage": block_storage.Proxy,
    "compute": compute.Proxy,
    "identity": identity.Proxy,
    "image": image.Proxy,
    "network": network.Proxy,
    "load_balancer": load_balancer.Proxy,
}
# How activities name a proxy other than conn.<service>: octavia's `_lb(scope)` and `proxy`, identity's helper.
HELPERS = {"_lb": "load_balancer", "_identity": "identity"}
LOCAL_NAMES = {("octavia.py", "proxy"): "load_balancer", ("project_scope.py", "identity"): "identity"}


def _is_listing(proxy: type, method: str) -> bool:
    fn = getattr(proxy, method, None)
    return callable(fn) and "self._list(" in inspect.getsource(fn)


def _service(module: str, receiver: ast.expr) -> str | None:
    if isinstance(receiver, ast.Attribute) and receiver.attr in PROXIES:
        return receiver.attr
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name):
        return HELPERS.get(receiver.func.id)
    if isinstance(receiver, ast.Name):
        return LOCAL_NAMES.get((module, receiver.id))
    return None


def listing_calls() -> list[tuple[str, int, str, str, list[str], int]]:
    """(module, line, service, method, keyword names, positional count) of each listing call."""
    calls = []
    for path in sorted(ACTIVITIES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            service = _service(path.name, node.func.value)
            if service is None or not _is_listing(PROXIES[service], node.func.attr):
                continue
            assert all(k.arg for k in node.keywords), f"{path.name}:{node.lineno}: a **splat hides its keys"
            keys = [str(k.arg) for k in node.keywords]
            calls.append((path.name, node.lineno, service, node.func.attr, keys, len(node.args)))
    return calls


def _forwarded(
    service: str, method: str, keys: list[str], positional: int
) -> tuple[type[resource.Resource], dict[str, Any]]:
    """What the proxy method hands to Resource.list: the resource class and the query."""
    seen: dict[str, Any] = {}

    class Recorder:
        def _list(
            self, cls: type, paginated: bool = True, base_path: str | None = None, **query: Any
        ) -> list:
            seen.update(cls=cls, query=query, base_path=base_path)
            return []

        def _get_resource(self, cls: Any, value: Any, **attrs: Any) -> Any:
            return cls.new(id=value, **attrs)

    listed = getattr(PROXIES[service], method)(Recorder(), *(["x"] * positional), **{k: "x" for k in keys})
    list(listed)  # some proxies (compute.flavors) are generators around _list
    return seen["cls"], {"query": seen["query"], "base_path": seen["base_path"]}


def _dropped(cls: type[resource.Resource], query: dict[str, Any], base_path: str | None) -> set[str]:
    """The keys Resource.list would neither send nor filter on: not in the query mapping, not a field."""
    kept = cls._query_mapping._validate(dict(query), base_path or cls.base_path, allow_unknown_params=True)
    client_side = {k for k in query if isinstance(getattr(cls, k, None), fields.Body)}
    uri = {k for k in query if isinstance(getattr(cls, k, None), fields.URI)}
    return set(query) - set(kept) - client_side - uri


CALLS = listing_calls()


def test_the_scan_finds_the_listings_it_guards() -> None:
    found = {(module, method) for module, _, _, method, _, _ in CALLS}
    assert {("octavia.py", "listeners"), ("octavia.py", "pools"), ("network.py", "subnets")} <= found
    assert {("cinder.py", "volumes"), ("project_scope.py", "projects"), ("neutron.py", "ips")} <= found


@pytest.mark.parametrize(("module", "line", "service", "method", "keys", "positional"), CALLS)
def test_no_query_key_is_dropped_silently(
    module: str, line: int, service: str, method: str, keys: list[str], positional: int
) -> None:
    cls, listed = _forwarded(service, method, keys, positional)
    assert not _dropped(cls, **listed), f"{module}:{line} {service}.{method}: openstacksdk drops these keys"


def test_the_old_listener_key_was_dropped() -> None:
    """The check itself: Pool knows loadbalancer_id, Listener does not (the bug this test guards)."""
    cls, listed = _forwarded("load_balancer", "listeners", ["loadbalancer_id"], 0)
    assert _dropped(cls, **listed) == {"loadbalancer_id"}
    cls, listed = _forwarded("load_balancer", "pools", ["loadbalancer_id"], 0)
    assert not _dropped(cls, **listed)
