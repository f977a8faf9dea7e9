"""`osprov demo`: the whole product on the local stack, converging in front of you.

Installs what is missing, starts the stack, runs the worker and the bridge, applies the example
resources with kubectl and shows them turning Ready; prints the Temporal Web UI URL. Ctrl-C
stops everything the demo started (the stack too, unless it was already running).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from devenv import stack
from devenv.demo_operator import NAMES as OPERATOR_VIEW_NAMES
from devenv.demo_operator import operator_view

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "openstack"
DEMO_REGION = "DemoRegion"
# The seed's Cinder example first (11 resources), then the other charts' identity objects.
IDENTITY_EXAMPLES = [
    "examples/identity/cinder.yaml",
    "examples/identity/glance.yaml",
    "examples/identity/placement.yaml",
    "examples/identity/nova.yaml",
    "examples/identity/neutron.yaml",
    "examples/identity/heat.yaml",
]
# Cloud kinds (full stack): a volume, a load balancer and a server in a project declared with identity kinds.
CLOUD_EXAMPLES = {
    "Volume": "examples/cinder/volume.yaml",
    "LoadBalancer": "examples/octavia/loadbalancer.yaml",
    "Server": "examples/nova/server.yaml",
}


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None, check: bool = True) -> str:
    exe = str(Path(sys.executable).parent / "kubectl")
    proc = subprocess.run([exe, *args], env=env, input=stdin, text=True, capture_output=True, cwd=REPO)
    if check and proc.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def cloud_ids(env: dict[str, str]) -> dict[str, str]:
    """IDs the cloud examples leave as ${…} placeholders, looked up in the local cloud."""
    import openstack
    import openstack.config

    loader = openstack.config.OpenStackConfig(config_files=[env["OS_CLIENT_CONFIG_FILE"]], load_envvars=False)
    conn = openstack.connection.Connection(config=loader.get_one(cloud=env["OS_CLOUD"]))
    try:
        return {
            "OSPROV_FLAVOR": "m1.tiny",
            "OSPROV_IMAGE_ID": conn.image.find_image("osprov-image-a", ignore_missing=False).id,
            "OSPROV_REBUILD_IMAGE_ID": conn.image.find_image("osprov-image-b", ignore_missing=False).id,
            "OSPROV_VIP_NETWORK_ID": conn.network.find_network("osprov-vip-net", ignore_missing=False).id,
            # The stack's shared network: the demo server gets a real port (IP and MAC) on it.
            "OSPROV_NETWORK_ID": conn.network.find_network("osprov-vip-net", ignore_missing=False).id,
            "OSPROV_VIP_SUBNET_ID": conn.network.find_subnet("osprov-vip-subnet", ignore_missing=False).id,
        }
    finally:
        conn.close()


def render(example: str, ids: dict[str, str]) -> str:
    text = (REPO / example).read_text().replace("region: RegionOne", f"region: {DEMO_REGION}")
    for key, value in ids.items():
        text = text.replace("${" + key + "}", value)
    return text


def rebuild_settled(env: dict[str, str], image: str) -> bool:
    out = kubectl(env, "get", "servers.nova.osh.openstack.org", "demo-server", "-n", NAMESPACE, "-o", "json")
    import json

    obj = json.loads(out)
    st = obj.get("status") or {}
    avail: dict[str, Any] = next((c for c in st.get("conditions") or [] if c["type"] == "Available"), {})
    return (
        obj["spec"]["imageID"] == image
        and st.get("observedGeneration") == obj["metadata"]["generation"]
        and not st.get("rebuild")
        and avail.get("status") == "True"
    )


def not_ready(env: dict[str, str]) -> list[str]:
    """Every osprov resource whose Ready (identity) or Available (cloud) condition is not True yet."""
    out = kubectl(
        env,
        "get",
        "osprov",
        "-n",
        NAMESPACE,
        "--no-headers",
        "-o",
        "custom-columns=NAME:.metadata.name,KIND:.kind,"
        'READY:.status.conditions[?(@.type=="Ready")].status,'
        'AVAILABLE:.status.conditions[?(@.type=="Available")].status',
        check=False,
    )
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return [f"{r[1]}/{r[0]}" for r in rows if "True" not in r[2:] and r[0] not in OPERATOR_VIEW_NAMES]


def examples(full: bool) -> list[str]:
    cloud = list(CLOUD_EXAMPLES.values()) if full else []
    return IDENTITY_EXAMPLES + cloud


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="osprov demo")
    parser.add_argument("--no-wait", action="store_true", help="exit once everything is Ready")
    parser.add_argument(
        "--identity-only",
        action="store_true",
        help="the fast path: Keystone only (no Nova/Cinder/Neutron/Octavia), identity examples only",
    )
    args = parser.parse_args(argv)
    from devenv.openstack.install import install

    install()
    was_up = stack.env_file().exists() and all(
        r.running for r in stack.status() if r.name in ("keystone", "kube")
    )
    stack.up(only_identity=args.identity_only)
    # Payloads encrypted with the key the stack's codec server holds: raw histories show nothing, the
    # Web UI shows everything (it decodes through the codec server).
    env = (
        dict(os.environ)
        | stack.load_env()
        | stack.codec_env()
        | {"OSPROV_NAMESPACES": NAMESPACE, "OSPROV_RESYNC_SECONDS": "300"}
    )
    logs = Path(env["OSPROV_STATE_DIR"]) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    # The operator's tenancy mapping (docs/identity.md): the examples name the project they declare.
    tenancy = Path(env["OSPROV_STATE_DIR"]) / "demo-tenancy.yaml"
    tenancy.write_text(
        yaml.safe_dump(
            {"namespaces": {NAMESPACE: {"projects": [{"name": "osprov-demo", "domain": "Default"}]}}}
        )
    )
    env["OSPROV_TENANCY_FILE"] = str(tenancy)
    procs = []
    for name in ("worker", "bridge"):
        out = open(logs / f"demo-{name}.log", "ab")  # noqa: SIM115 - owned by the child
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", f"osprov.{name}"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=REPO,
            )
        )
    try:
        kubectl(env, "apply", "-f", "deploy/crds/")  # current CRDs, also into an emulator started earlier
        kubectl(
            env,
            "apply",
            "-f",
            "-",
            stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n",
        )
        ids = cloud_ids(env) if not args.identity_only else {}
        for example in examples(full=not args.identity_only):
            # The examples are the charts' real catalog entries (cinderv3 in RegionOne, …). The local cloud
            # serves its own catalog from RegionOne, so the demo publishes them into a region of its own
            # instead of re-pointing the local cloud's endpoints at cluster URLs that do not resolve here.
            print(kubectl(env, "apply", "-n", NAMESPACE, "-f", "-", stdin=render(example, ids)), end="")
        print(
            f"\nTemporal Web UI: {env['OSPROV_TEMPORAL_UI_URL']}/namespaces/{env['OSPROV_TEMPORAL_NAMESPACE']}"
            "/workflows   (one workflow per resource)"
        )
        print(f"kubectl: export KUBECONFIG={env['KUBECONFIG']}; kubectl get keystone -n {NAMESPACE}\n")
        deadline = time.monotonic() + 600
        while (pending := not_ready(env)) and time.monotonic() < deadline:
            print(
                f"waiting for {len(pending)} resources: {', '.join(pending[:6])}{' …' if len(pending) > 6 else ''}"
            )
            time.sleep(3)
        print(kubectl(env, "get", "osprov", "-n", NAMESPACE))
        if pending:
            print(
                f"not Ready after 10 minutes: {', '.join(pending)} — see {logs}/demo-worker.log",
                file=sys.stderr,
            )
            return 1
        print("every resource is Ready.")
        if not operator_view(kubectl, env, NAMESPACE):
            print("the operator's-view resources did not reach their states in 2 minutes", file=sys.stderr)
            return 1
        if ids and any(e.endswith("server.yaml") for e in examples(full=True)):
            image = ids["OSPROV_REBUILD_IMAGE_ID"]
            if not rebuild_settled(env, image):
                print(f"changing demo-server's image to osprov-image-b ({image}): Nova rebuilds it in place")
                kubectl(
                    env,
                    "patch",
                    "servers.nova.osh.openstack.org",
                    "demo-server",
                    "-n",
                    NAMESPACE,
                    "--type=merge",
                    "-p",
                    f'{{"spec":{{"imageID":"{image}"}}}}',
                )
                deadline = time.monotonic() + 300
                while not rebuild_settled(env, image) and time.monotonic() < deadline:
                    time.sleep(2)
            print(kubectl(env, "get", "servers.nova.osh.openstack.org", "-n", NAMESPACE, "-o", "wide"))
            if not rebuild_settled(env, image):
                print(
                    "the rebuild did not settle in 5 minutes — see the Server's workflow in the Web UI",
                    file=sys.stderr,
                )
                return 1
            print("rebuild settled: same server, new image.")
        if not args.no_wait:
            print("Ctrl-C stops the demo.")
        if not args.no_wait:
            signal.signal(signal.SIGTERM, _interrupt)
            signal.pause()
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=30)
        if not was_up:
            stack.down(wipe=False)
        print("demo stopped")
