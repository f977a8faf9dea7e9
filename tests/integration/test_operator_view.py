"""What an operator sees, on the real Keystone: `kubectl describe` Events and `osprov status`.

Three resources in three situations — one waiting for a dependency, one in conflict with another
declaration, one converged — through the real kubectl against the local stack's apiserver, and the
`osprov status` command against the real Temporal, as an operator would run them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devenv.testing import StackEnv
from osprov.api.operations import PAUSED
from osprov.api.registry import kind_info
from tests.support.osprov import Osprov, admin_connection, run_osprov
from tests.support.waiting import wait_for

pytestmark = pytest.mark.stack

KUBECTL = str(Path(sys.executable).parent / "kubectl")


@pytest.fixture(scope="module")
def osprov(identity_stack: StackEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Osprov]:
    yield from run_osprov(identity_stack, tmp_path_factory.mktemp("operator-view"))


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def describe_events(o: Osprov, kind: str, name: str) -> str:
    """The Events section of `kubectl describe` for one resource."""
    resource = kind_info(kind).crd_name
    out = subprocess.run(
        [KUBECTL, "--kubeconfig", str(o.stack.kubeconfig), "describe", resource, name, "-n", o.namespace],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return out.split("Events:", 1)[1]


def osprov_status(o: Osprov, kind: str, name: str) -> tuple[int, str]:
    run = subprocess.run(
        [sys.executable, "-m", "osprov", "status", f"{kind}/{name}", "-n", o.namespace],
        env=dict(os.environ) | o.stack.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return run.returncode, run.stdout + run.stderr


def row(output: str, key: str) -> str:
    [line] = [line for line in output.splitlines() if line.startswith(f"{key}:")]
    return line.split(":", 1)[1].strip()


def test_status_and_describe_show_a_waiting_a_conflicting_and_a_converged_resource(osprov: Osprov) -> None:
    domain = uniq("later")
    osprov.apply("Project", "waits", {"name": "p", "domain": domain})
    twin = uniq("twin")
    for secret in ("pw-a", "pw-b"):
        osprov.create_secret(secret, {"OS_PASSWORD": uuid.uuid4().hex})
    user = {"name": twin, "domain": "Default"}
    osprov.apply("User", "first", user | {"passwordSecret": {"name": "pw-a"}})
    osprov.wait_ready("User", "first")
    osprov.apply("User", "second", user | {"passwordSecret": {"name": "pw-b"}})
    wait_for(
        lambda: (c := osprov.condition("User", "second")) and c["reason"] == "Conflict", "the conflict", 60
    )
    missing = f"domain '{domain}' does not exist in Keystone yet"
    wait_for(lambda: missing in describe_events(osprov, "Project", "waits"), "the waiting Event", 60)

    # osprov status of the stuck resource: the step it waits in and why, not converged (exit 1).
    code, out = osprov_status(osprov, "Project", "waits")
    assert code == 1, out
    assert row(out, "resource") == f"Project {osprov.namespace}/waits"
    assert row(out, "step") not in ("", "-") and missing in row(out, "ready")
    assert row(out, "generation") == "wanted 1, applied None"
    assert missing in out.split("\nevents:", 1)[1]  # the resource's recent Events, as describe shows them
    assert row(out, "web ui").startswith(f"{osprov.stack.temporal_ui_url}/namespaces/")
    code, out = osprov_status(osprov, "User", "second")
    assert code == 1 and row(out, "ready").startswith("False (Conflict)"), out
    assert f"User {osprov.namespace}/first already declares" in row(out, "ready")

    osprov.apply("Domain", "later", {"name": domain})
    osprov.wait_ready("Project", "waits", timeout_s=90)
    code, out = osprov_status(osprov, "Project", "waits")
    assert code == 0 and row(out, "ready").startswith("True"), out
    assert row(out, "generation") == "wanted 1, applied 1" and row(out, "last failure") == "-"

    waited = describe_events(osprov, "Project", "waits")
    assert missing in waited and "Normal" in waited
    assert waited.index(missing) < waited.index("Created")  # waited, then created
    conflict = describe_events(osprov, "User", "second")
    assert "Warning" in conflict and "Conflict" in conflict and "already declares" in conflict
    assert "Created" in describe_events(osprov, "Domain", "later")
    assert "Created" not in conflict  # the conflicting declaration made nothing

    code, out = osprov_status(osprov, "Project", "nothing-here")
    assert code == 2 and "no osprov workflow for Project" in out


def kubectl(o: Osprov, *args: str) -> None:
    subprocess.run(
        [KUBECTL, "--kubeconfig", str(o.stack.kubeconfig), "-n", o.namespace, *args],
        capture_output=True,
        check=True,
        timeout=60,
    )


def keystone_requests(stack: StackEnv, since: int, *needles: str) -> list[str]:
    """The requests Keystone logged since byte `since` whose line names any of `needles`."""
    with open(stack.state_dir / "logs" / "keystone.log", "rb") as log:
        log.seek(since)
        lines = log.read().decode(errors="replace").splitlines()
    return [line for line in lines if " /v3/" in line and any(n in line for n in needles)]


def test_a_paused_resource_calls_nothing_while_its_spec_changes_and_converges_when_unpaused(
    osprov: Osprov, identity_stack: StackEnv
) -> None:
    name = uniq("held")
    osprov.apply("Project", "held", {"name": name, "domain": "Default", "description": "v1"})
    osprov.wait_ready("Project", "held")
    conn = admin_connection(identity_stack)
    ks: Any = conn.identity
    project = ks.find_project(name, domain_id="default", ignore_missing=False)
    resource = kind_info("Project").crd_name

    kubectl(osprov, "annotate", resource, "held", f"{PAUSED}=true")
    wait_for(lambda: (osprov.condition("Project", "held") or {}).get("reason") == "Paused", "Paused", 60)
    log_offset = (identity_stack.state_dir / "logs" / "keystone.log").stat().st_size
    osprov.apply("Project", "held", {"name": name, "domain": "Default", "description": "v2"})
    wait_for(
        lambda: (
            "generation 2 is not applied yet"
            in (osprov.condition("Project", "held") or {}).get("message", "")
        ),
        "the paused workflow records generation 2",
        60,
    )
    # Read the log before this test's own GET below lands in it: the paused workflow made no call.
    assert keystone_requests(identity_stack, log_offset, project.id, name) == []  # not even a read
    assert ks.get_project(project.id).description == "v1"
    assert "Pause" in describe_events(osprov, "Project", "held")

    kubectl(osprov, "annotate", resource, "held", f"{PAUSED}-")
    osprov.wait_ready("Project", "held", generation=2)
    assert ks.get_project(project.id).description == "v2"
    # resumed: the workflow made the write (the test itself only reads)
    assert keystone_requests(identity_stack, log_offset, f"PATCH /v3/projects/{project.id}")
    conn.close()
