"""The demo's last act: what an operator sees of a waiting, an erroring and a converged resource.

Three resources are applied on top of the examples: a Project in a domain nobody has declared yet
(waiting), a User whose password Secret does not exist (erroring: nothing is written to Keystone), and
then the missing Domain, after which the Project converges. For each, the demo prints the Events
`kubectl describe` shows, and `osprov status` of the waiting one, as an operator would run them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from osprov.api.registry import kind_info

Kubectl = Callable[..., str]
# deletionPolicy delete: each demo run starts by deleting the previous run's three (and their Keystone
# objects), so the Project waits again.
REF = {"keystoneRef": {"name": "keystone"}, "deletionPolicy": "delete"}
WAITS = ("Project", "demo-waits", {"name": "demo-waits", "domain": "demo-later", "description": "waits"})
BROKEN = (
    "User",
    "demo-broken",
    {"name": "demo-broken", "domain": "Default", "passwordSecret": {"name": "nope"}},
)
LATER = ("Domain", "demo-later", {"name": "demo-later"})
NAMES = {WAITS[1], BROKEN[1], LATER[1]}  # not examples: the demo's wait for Ready leaves them out


def _apply(kubectl: Kubectl, env: dict[str, str], namespace: str, kind: str, name: str, spec: Any) -> None:
    info = kind_info(kind)
    body = {"apiVersion": info.api_version, "kind": kind, "metadata": {"name": name}, "spec": spec | REF}
    kubectl(env, "apply", "-n", namespace, "-f", "-", stdin=json.dumps(body))


def _ready(kubectl: Kubectl, env: dict[str, str], namespace: str, kind: str, name: str) -> dict[str, Any]:
    out = kubectl(env, "get", kind_info(kind).crd_name, name, "-n", namespace, "-o", "json", check=False)
    conditions = (json.loads(out).get("status") or {}).get("conditions") or [] if out else []
    return next((c for c in conditions if c["type"] == "Ready"), {})


def _events(kubectl: Kubectl, env: dict[str, str], namespace: str, kind: str, name: str) -> str:
    out = kubectl(env, "describe", kind_info(kind).crd_name, name, "-n", namespace)
    return "Events:" + out.split("Events:", 1)[1] if "Events:" in out else "(no Events section)"


def _until(check: Callable[[], bool], deadline_s: float) -> bool:
    end = time.monotonic() + deadline_s
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(1)
    return True


def operator_view(kubectl: Kubectl, env: dict[str, str], namespace: str) -> bool:
    """Print describe's Events of a waiting, an erroring and a converged resource; False if one never
    got there."""
    print("\nWhat an operator sees: kubectl describe (Events) and osprov status")
    for kind, name, _ in (WAITS, BROKEN, LATER):  # a previous run's, deleted in this order
        kubectl(
            env, "delete", kind_info(kind).crd_name, name, "-n", namespace, "--ignore-not-found", "--wait"
        )
    for kind, name, spec in (WAITS, BROKEN):
        _apply(kubectl, env, namespace, kind, name, spec)

    def stuck(kind: str, name: str) -> bool:
        return _ready(kubectl, env, namespace, kind, name).get("status") == "False"

    ok = _until(lambda: stuck("Project", "demo-waits") and stuck("User", "demo-broken"), 120)
    for kind, name, what in (("Project", "demo-waits", "waiting"), ("User", "demo-broken", "erroring")):
        print(f"\n--- {what}: kubectl describe {kind_info(kind).crd_name} {name} -n {namespace}")
        print(_events(kubectl, env, namespace, kind, name))
    status = subprocess.run(
        [sys.executable, "-m", "osprov", "status", "Project/demo-waits", "-n", namespace],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    print(f"--- osprov status Project/demo-waits -n {namespace}\n{status.stdout}{status.stderr}")

    _apply(kubectl, env, namespace, *LATER)
    converged = _until(
        lambda: _ready(kubectl, env, namespace, "Project", "demo-waits").get("status") == "True", 120
    )
    print(
        f"\n--- converged once Domain demo-later exists: kubectl describe projects … demo-waits -n {namespace}"
    )
    print(_events(kubectl, env, namespace, "Project", "demo-waits"))
    _delete(kubectl, env, namespace)  # the next demo shows the same again
    return ok and converged


def _delete(kubectl: Kubectl, env: dict[str, str], namespace: str) -> None:
    """Delete the three (and, deletionPolicy delete, their Keystone objects), the Project before its domain."""
    for kind, name, _ in (WAITS, BROKEN, LATER):
        resource = kind_info(kind).crd_name
        kubectl(
            env, "delete", resource, name, "-n", namespace, "--ignore-not-found", "--wait", "--timeout=120s"
        )
