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

from devenv import stack

REPO = Path(__file__).resolve().parents[1]
NAMESPACE = "openstack"
DEMO_REGION = "DemoRegion"
# The seed's Cinder example first (11 resources), then the other charts' identity objects.
EXAMPLES = ["examples/identity/cinder.yaml", "examples/identity/glance.yaml", "examples/identity/placement.yaml",
            "examples/identity/nova.yaml", "examples/identity/neutron.yaml", "examples/identity/heat.yaml"]


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None, check: bool = True) -> str:
    exe = str(Path(sys.executable).parent / "kubectl")
    proc = subprocess.run([exe, *args], env=env, input=stdin, text=True, capture_output=True, cwd=REPO)
    if check and proc.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def not_ready(env: dict[str, str]) -> list[str]:
    out = kubectl(env, "get", "keystone", "-n", NAMESPACE, "--no-headers",
                  "-o", "custom-columns=NAME:.metadata.name,KIND:.kind,"
                  'READY:.status.conditions[?(@.type=="Ready")].status', check=False)
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return [f"{r[1]}/{r[0]}" for r in rows if len(r) < 3 or r[2] != "True"]


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="osprov demo")
    parser.add_argument("--no-wait", action="store_true", help="exit once everything is Ready")
    args = parser.parse_args(argv)
    from devenv.openstack.install import install

    install()
    was_up = stack.env_file().exists() and all(r.running for r in stack.status() if r.name in ("keystone", "kube"))
    stack.up(only_identity=True)
    # Payloads encrypted with the key the stack's codec server holds: raw histories show nothing, the
    # Web UI shows everything (it decodes through the codec server).
    env = dict(os.environ) | stack.load_env() | stack.codec_env() | {
        "OSPROV_NAMESPACES": NAMESPACE, "OSPROV_RESYNC_SECONDS": "300"}
    logs = Path(env["OSPROV_STATE_DIR"]) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    for name in ("worker", "bridge"):
        out = open(logs / f"demo-{name}.log", "ab")  # noqa: SIM115 - owned by the child
        procs.append(subprocess.Popen([sys.executable, "-m", name], env=env, stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True, cwd=REPO))
    try:
        kubectl(env, "apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n")
        for example in EXAMPLES:
            # The examples are the charts' real catalog entries (cinderv3 in RegionOne, …). The local cloud
            # serves its own catalog from RegionOne, so the demo publishes them into a region of its own
            # instead of re-pointing the local cloud's endpoints at cluster URLs that do not resolve here.
            manifest = (REPO / example).read_text().replace("region: RegionOne", f"region: {DEMO_REGION}")
            print(kubectl(env, "apply", "-n", NAMESPACE, "-f", "-", stdin=manifest), end="")
        print(f"\nTemporal Web UI: {env['OSPROV_TEMPORAL_UI_URL']}/namespaces/{env['OSPROV_TEMPORAL_NAMESPACE']}"
              "/workflows   (one workflow per resource)")
        print(f"kubectl: export KUBECONFIG={env['KUBECONFIG']}; kubectl get keystone -n {NAMESPACE}\n")
        deadline = time.monotonic() + 300
        while (pending := not_ready(env)) and time.monotonic() < deadline:
            print(f"waiting for {len(pending)} resources: {', '.join(pending[:6])}{' …' if len(pending) > 6 else ''}")
            time.sleep(3)
        print(kubectl(env, "get", "keystone", "-n", NAMESPACE))
        if pending:
            print(f"not Ready after 5 minutes: {', '.join(pending)} — see {logs}/demo-worker.log", file=sys.stderr)
            return 1
        print("every resource is Ready. Ctrl-C stops the demo." if not args.no_wait else "every resource is Ready.")
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
