"""Runs osprov's worker and bridge as real processes against the local stack, for integration tests.

Each test module gets its own Kubernetes namespace and task queue, so modules never see each
other's resources. Processes are their own process group; kill() is a real SIGKILL (crash tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import kubernetes
import openstack
import openstack.config
import openstack.connection
import yaml
from kubernetes.client.exceptions import ApiException
from temporalio.client import Client
from temporalio.service import RPCError

from devenv.testing import StackEnv
from tests.support.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Proc:
    name: str
    args: list[str]
    env: dict[str, str]
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child for its lifetime
        self.popen = subprocess.Popen(
            self.args, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO
        )

    def kill(self) -> None:
        """kill -9 of the whole process group: no drain, no cleanup (crash simulation)."""
        if self.popen and self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=30)

    def stop(self) -> None:
        if self.popen and self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self) -> None:
        self.kill()
        self.start()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@dataclass
class Osprov:
    """A worker and a bridge serving one namespace, plus clients to check outcomes with."""

    stack: StackEnv
    namespace: str
    worker: Proc
    bridge: Proc
    kube: kubernetes.client.ApiClient
    procs: list[Proc] = field(default_factory=list)
    namespaces: list[Osprov] = field(default_factory=list)  # views of every namespace this controller serves

    def ensure_running(self) -> None:
        """Start whichever process a test killed or stopped and left down."""
        for proc in self.procs:
            if proc.popen is None or proc.popen.poll() is not None:
                proc.start()

    # ----- Kubernetes side ----------------------------------------------------------------------
    @property
    def custom(self) -> kubernetes.client.CustomObjectsApi:
        return kubernetes.client.CustomObjectsApi(self.kube)

    def apply(self, kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        from osprov.api.registry import kind_info

        info = kind_info(kind)
        body = {"apiVersion": info.api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}
        if self.get(kind, name) is None:
            return cast(
                dict[str, Any],
                self.custom.create_namespaced_custom_object(
                    info.group, info.version, self.namespace, info.plural, body
                ),
            )
        return cast(
            dict[str, Any],
            self.custom.patch_namespaced_custom_object(
                info.group,
                info.version,
                self.namespace,
                info.plural,
                name,
                {"spec": spec},
                _content_type="application/merge-patch+json",
            ),
        )

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        from osprov.api.registry import kind_info

        info = kind_info(kind)
        try:
            return cast(
                dict[str, Any],
                self.custom.get_namespaced_custom_object(
                    info.group, info.version, self.namespace, info.plural, name
                ),
            )
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def annotate(self, kind: str, name: str, annotations: dict[str, str | None]) -> None:
        """Set (or, with None, remove) annotations, as `kubectl annotate` does."""
        from osprov.api.registry import kind_info

        info = kind_info(kind)
        self.custom.patch_namespaced_custom_object(
            info.group,
            info.version,
            self.namespace,
            info.plural,
            name,
            {"metadata": {"annotations": annotations}},
            _content_type="application/merge-patch+json",
        )

    def delete(self, kind: str, name: str) -> None:
        from osprov.api.registry import kind_info

        info = kind_info(kind)
        self.custom.delete_namespaced_custom_object(
            info.group, info.version, self.namespace, info.plural, name
        )

    def condition(self, kind: str, name: str, ctype: str = "Ready") -> dict[str, Any] | None:
        obj = self.get(kind, name) or {}
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c.get("type") == ctype:
                return c  # type: ignore[no-any-return]
        return None

    def wait_ready(
        self, kind: str, name: str, timeout_s: float = 60, generation: int | None = None, ctype: str = "Ready"
    ) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            obj = self.get(kind, name) or {}  # one read: condition and fields from the same version
            st = obj.get("status") or {}
            gen = generation or (obj.get("metadata") or {}).get("generation")
            c = next((c for c in st.get("conditions") or [] if c.get("type") == ctype), None)
            return obj if c and c["status"] == "True" and st.get("observedGeneration") == gen else None

        return wait_for(ready, f"{kind} {name} {ctype}", timeout_s)

    def create_secret(self, name: str, data: dict[str, str]) -> None:
        core = kubernetes.client.CoreV1Api(self.kube)
        body = {"metadata": {"name": name}, "stringData": data}
        try:
            core.create_namespaced_secret(self.namespace, body)  # type: ignore[arg-type] # a dict is accepted
        except ApiException as err:
            if err.status != 409:
                raise
            core.patch_namespaced_secret(name, self.namespace, {"stringData": data})


def admin_connection(stack: StackEnv) -> openstack.connection.Connection:
    loader = openstack.config.OpenStackConfig(config_files=[str(stack.clouds_yaml)], load_envvars=False)
    return openstack.connection.Connection(config=loader.get_one(cloud=stack.cloud))


def clouds_env(stack: StackEnv, tmp: Path, edit: Callable[[dict[str, Any]], None]) -> dict[str, str]:
    """Env for a worker whose clouds.yaml entry is the stack's as changed by `edit` (for example, one
    service reached through a fault proxy)."""
    clouds = yaml.safe_load(stack.clouds_yaml.read_text())
    edit(clouds["clouds"][stack.cloud])
    path = tmp / "clouds-edited.yaml"
    path.write_text(yaml.safe_dump(clouds))
    path.chmod(0o600)
    return {"OS_CLIENT_CONFIG_FILE": str(path)}


def endpoint_override(service: str, url: str, api_version: str) -> Callable[[dict[str, Any]], None]:
    """A clouds.yaml edit for clouds_env: `service` (e.g. block_storage, compute) is reached at `url`.
    With both the override and the API version set, openstacksdk trusts the URL instead of running version
    discovery on it."""

    def edit(entry: dict[str, Any]) -> None:
        entry[f"{service}_endpoint_override"] = url
        entry[f"{service}_api_version"] = api_version

    return edit


def ensure_crd(stack: StackEnv, kind: str) -> None:
    """Install the generated CRD of `kind` if the running kube emulator started before it existed, or
    replace it if it was installed from an older model (a stack kept running across a schema change)."""
    from osprov.api.registry import CLUSTER_KINDS, kind_info

    api = kubernetes.config.new_client_from_config(config_file=str(stack.kubeconfig))
    info = next((c for c in CLUSTER_KINDS if c.kind == kind), None) or kind_info(kind)
    ext = kubernetes.client.ApiextensionsV1Api(api)
    body = yaml.safe_load((REPO / "deploy" / "crds" / f"{info.crd_name}.yaml").read_text())
    try:
        served = api.sanitize_for_serialization(ext.read_custom_resource_definition(info.crd_name))
    except ApiException as err:
        if err.status != 404:
            raise
        ext.create_custom_resource_definition(body)
    else:
        if served["spec"]["versions"] != body["spec"]["versions"]:
            body["metadata"]["resourceVersion"] = served["metadata"]["resourceVersion"]
            ext.replace_custom_resource_definition(info.crd_name, body)
    custom = kubernetes.client.CustomObjectsApi(api)
    wait_for(
        lambda: custom.list_cluster_custom_object(info.group, info.version, info.plural) is not None,
        f"the {kind} CRD is served",
        30,
    )


def run_osprov(
    stack: StackEnv,
    tmp: Path,
    resync_seconds: float = 600.0,
    extra_env: dict[str, str] | None = None,
    kubeconfig: Path | None = None,
    extra_namespaces: int = 0,
) -> Iterator[Osprov]:
    """Worker + bridge for a fresh namespace (and `extra_namespaces` more, served by the same controller:
    `Osprov.namespaces`); `kubeconfig` points them at another (e.g. private) apiserver."""
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    others = [f"{namespace}-{i}" for i in range(1, extra_namespaces + 1)]
    env = (
        dict(os.environ)
        | stack.env
        | {
            "OSPROV_NAMESPACES": ",".join([namespace, *others]),
            "OSPROV_TASK_QUEUE": f"osprov-{namespace}",
            "OSPROV_RESYNC_SECONDS": str(resync_seconds),
            "OSPROV_ACTIVITY_THREADS": "4",
            "OSPROV_LOG_LEVEL": "INFO",
            "KUBECONFIG": str(kubeconfig or stack.kubeconfig),
        }
        | (extra_env or {})
    )
    if "OSPROV_TENANCY_FILE" not in env:
        # The cloud kinds' modules name projects they create (spec.project): the operator's explicit opt-in.
        mapping = {"namespaces": {ns: {"any_project": True} for ns in [namespace, *others]}}
        env["OSPROV_TENANCY_FILE"] = str(tmp / "tenancy.yaml")
        (tmp / "tenancy.yaml").write_text(yaml.safe_dump(mapping))
    kube = kubernetes.config.new_client_from_config(config_file=env["KUBECONFIG"])
    for ns in [namespace, *others]:
        kubernetes.client.CoreV1Api(kube).create_namespace({"metadata": {"name": ns}})  # type: ignore[arg-type]
    python = sys.executable
    worker = Proc("worker", [python, "-m", "osprov.worker"], env, tmp / "worker.log")
    bridge = Proc("bridge", [python, "-m", "osprov.bridge"], env, tmp / "bridge.log")
    worker.start()
    bridge.start()
    o = Osprov(
        stack=stack, namespace=namespace, worker=worker, bridge=bridge, kube=kube, procs=[worker, bridge]
    )
    o.namespaces = [o] + [replace(o, namespace=ns, procs=[]) for ns in others]
    try:
        yield o
    finally:
        for p in o.procs:
            p.stop()
        for ns in [namespace, *others]:
            _terminate_workflows(stack, ns)


async def _chain(*streams: Any) -> Any:
    for stream in streams:
        async for item in stream:
            yield item


def _terminate_workflows(stack: StackEnv, namespace: str) -> None:
    """No worker serves this namespace's task queue any more: end its workflows (they would only hold timers)."""

    async def terminate() -> None:
        client = await Client.connect(stack.temporal_address, namespace=stack.temporal_namespace)
        query = f"OsprovNamespace = '{namespace}' AND ExecutionStatus = 'Running'"
        # The Keystone objects' and the sweep's workflows of this controller (its own task queue) are not
        # namespaced.
        objects = f"TaskQueue = 'osprov-{namespace}' AND ExecutionStatus = 'Running'"
        async for wf in _chain(client.list_workflows(query), client.list_workflows(objects)):
            with contextlib.suppress(RPCError):  # finished meanwhile
                await client.get_workflow_handle(wf.id, run_id=wf.run_id).terminate("test module finished")

    asyncio.run(terminate())
