"""The Helm chart (deploy/helm/osprov) rendered by real Helm is the kustomize base, and installs onto the
embedded Kubernetes API.

Helm comes from PyPI as helm-python-sdk: Helm's own Go SDK (helm.sh/helm/v4, its template engine and
sprig) compiled into libhelm_c and called through ctypes. `Chart.render` is what `helm template` renders;
`Config.install` is `helm install`. Nothing here renders a Go template by hand.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml
from kubernetes import client

from devenv.kube.testing import RunningEmulator, run_emulator
from osprov.activities import nova_ssh, tenancy
from tests.deploy.test_manifests import REPO
from tests.deploy.test_transport_manifests import kustomize

CHART = REPO / "deploy" / "helm" / "osprov"
NAMESPACE = yaml.safe_load((REPO / "deploy" / "kustomization.yaml").read_text())["namespace"]
KUBECTL = str(Path(sys.executable).parent / "kubectl")
Doc = dict[str, Any]


def helm_template(values: Doc | None = None, namespace: str = NAMESPACE) -> list[Doc]:
    """`helm template --include-crds`: the CRDs of crds/, then every rendered template."""
    with helm.Chart.load(CHART) as chart:
        crds = [c["data"] for c in chart.crds]
        rendered = chart.render(values, name="osprov", namespace=namespace, is_install=True)
    texts = crds + [rendered[k] for k in sorted(rendered) if not k.endswith("NOTES.txt")]
    return [d for text in texts for d in yaml.safe_load_all(text) if d]


def _rules(rules: list[Doc]) -> set[tuple[str, str, str, tuple[str, ...]]]:
    """RBAC rules as what they grant, whatever their grouping and order."""
    return {
        (group, resource, verb, tuple(rule.get("resourceNames") or ()))
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def comparable(doc: Doc) -> Doc:
    """What must be equal: everything but labels, annotations and the namespace (Helm's release labels,
    kustomize's namespace stamping, the chart's settings checksum that rolls pods on a change) and the
    order of lists merged by name."""
    doc = yaml.safe_load(yaml.safe_dump(doc))  # a deep copy
    for key in ("labels", "annotations", "namespace"):
        doc["metadata"].pop(key, None)
    template = (doc.get("spec") or {}).get("template")
    if template:
        template["metadata"]["annotations"].pop("checksum/settings", None)
        # Lists merged by name (kustomize's patches prepend): their order means nothing.
        pod = template["spec"]
        pod["volumes"] = sorted(pod.get("volumes") or [], key=lambda v: v["name"])
        for container in pod["containers"]:
            container["volumeMounts"] = sorted(container.get("volumeMounts") or [], key=lambda m: m["name"])
    if doc["kind"] in ("Role", "ClusterRole"):
        doc["rules"] = _rules(doc["rules"])
    if doc["kind"] == "ConfigMap":  # a YAML file in a ConfigMap: its content, not its spelling
        doc["data"] = {
            k: yaml.safe_load(v) if k.endswith(".yaml") else v for k, v in (doc.get("data") or {}).items()
        }
    return doc


def by_object(docs: list[Doc]) -> dict[tuple[str, str], Doc]:
    keyed = {(d["kind"], d["metadata"]["name"]): comparable(d) for d in docs}
    assert len(keyed) == len(docs), "an object is rendered twice"
    return keyed


def test_helm_template_renders_the_kustomize_base(tmp_path: Path) -> None:
    charted, based = by_object(helm_template()), by_object(kustomize(tmp_path))
    assert sorted(charted) == sorted(based)
    for key, doc in based.items():
        assert charted[key] == doc, key


def test_with_tls_the_chart_renders_the_temporal_tls_component(tmp_path: Path) -> None:
    values = {"temporal": {"tls": {"enabled": True}}}
    assert by_object(helm_template(values)) == by_object(kustomize(tmp_path, "temporal-tls"))


def test_the_tenancy_values_become_the_mapping_the_worker_reads(tmp_path: Path) -> None:
    mapping = {
        "namespaces": {"team-a": {"domain": "tenants", "projects": [{"name": "old", "domain": "Default"}]}}
    }
    docs = helm_template({"tenancy": mapping})
    [configmap] = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "osprov-tenancy"]
    path = tmp_path / "tenancy.yaml"
    path.write_text(configmap["data"]["tenancy.yaml"])
    config = tenancy.load(str(path))
    assert config.namespaces["team-a"].domain == "tenants"
    assert [p.name for p in config.namespaces["team-a"].projects] == ["old"]
    assert config.roles == ["member", "load-balancer_member"]  # the chart's default stays


def test_the_ssh_ca_value_becomes_the_file_the_worker_reads(tmp_path: Path) -> None:
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv7kL6hWmzTP1n9qDP1o2T0bUZ1mYq8Hf0m4A2Nq9Zb ops-ca"
    assert not [d for d in helm_template() if d["metadata"]["name"] == "osprov-ssh-ca"]  # unset: none
    [configmap] = [
        d for d in helm_template({"sshCA": key + "\n"}) if d["metadata"]["name"] == "osprov-ssh-ca"
    ]
    path = tmp_path / "ca.pub"
    path.write_text(configmap["data"]["ca.pub"])
    with pytest.MonkeyPatch.context() as env:
        env.setenv(nova_ssh.SSH_CA_FILE_ENV, str(path))
        assert nova_ssh.ca_keys() == [key]


def test_the_rbac_rules_follow_the_crds_and_the_lease_name() -> None:
    values = {"bridge": {"lease": {"name": "other"}}, "inventory": {"config": "region-a"}}
    roles = {
        d["metadata"]["name"]: _rules(d["rules"])
        for d in helm_template(values)
        if d["kind"] in ("Role", "ClusterRole")
    }
    crds = [d for d in helm_template() if d["kind"] == "CustomResourceDefinition"]
    namespaced = [c for c in crds if c["spec"]["scope"] == "Namespaced"]
    watched = {(c["spec"]["group"], c["spec"]["names"]["plural"], "watch", ()) for c in namespaced}
    assert watched <= roles["osprov-bridge"]
    assert not any(
        g == "region.osh.openstack.org" for g, *_ in roles["osprov-bridge"] | roles["osprov-worker"]
    )
    assert ("coordination.k8s.io", "leases", "update", ("other",)) in roles["osprov-bridge"]
    # The inventory: what each CRD's annotation names, and the configured InventoryConfig only.
    annotated = {
        (c["spec"]["group"], c["spec"]["names"]["plural"], verb, ())
        for c in crds
        for verb in c["metadata"]["annotations"].get("region.osh.openstack.org/worker-verbs", "").split(",")
        if verb
    }
    config = ("region.osh.openstack.org", "inventoryconfigs", "get", ("region-a",))
    assert roles["osprov-worker-inventory"] == annotated | {config}


def test_without_an_inventory_config_the_chart_grants_nothing_cluster_wide() -> None:
    docs = helm_template({"inventory": {"config": ""}})
    assert not [d for d in docs if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    [settings] = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "osprov-settings"]
    assert settings["data"]["OSPROV_INVENTORY_CONFIG"] == ""


def test_the_watched_namespace_defaults_to_the_release_namespace() -> None:
    [settings] = [
        d
        for d in helm_template(namespace="tenant-a")
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "osprov-settings"
    ]
    assert settings["data"]["OSPROV_NAMESPACES"] == "tenant-a"
    [settings] = [
        d
        for d in helm_template({"watchNamespaces": ["a", "b"]})
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "osprov-settings"
    ]
    assert settings["data"]["OSPROV_NAMESPACES"] == "a,b"


def test_helm_lint_strict_finds_no_warning_or_error() -> None:
    report = helm.lint(CHART, strict=True, namespace=NAMESPACE)
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == [], report


# ----- onto the embedded Kubernetes API --------------------------------------------------------------


@pytest.fixture
def kube(tmp_path: Path) -> Iterator[RunningEmulator]:
    with run_emulator(tmp_path / "kube") as emulator:
        with emulator.api_client() as api:
            client.CoreV1Api(api).create_namespace(
                client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
            )
        yield emulator


def kubectl(kube: RunningEmulator, *args: str, stdin: str = "") -> str:
    env = {**os.environ, "KUBECONFIG": kube.kubeconfig, "KUBECACHEDIR": kube.kubectl_cache_dir}
    result = subprocess.run(
        [KUBECTL, *args], env=env, input=stdin, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def installed(kube: RunningEmulator) -> set[tuple[str, str]]:
    """(kind, name) of what the emulator holds, read through the official client."""
    with kube.api_client() as api:
        apps, rbac, core = client.AppsV1Api(api), client.RbacAuthorizationV1Api(api), client.CoreV1Api(api)
        listed: dict[str, list[Any]] = {
            "Deployment": apps.list_namespaced_deployment(NAMESPACE).items,
            "Role": rbac.list_namespaced_role(NAMESPACE).items,
            "ConfigMap": core.list_namespaced_config_map(NAMESPACE).items,
            "CustomResourceDefinition": client.ApiextensionsV1Api(api)
            .list_custom_resource_definition()
            .items,
        }
    return {(kind, o.metadata.name) for kind, items in listed.items() for o in items} - {
        ("ConfigMap", "kube-root-ca.crt")
    }


def expected() -> set[tuple[str, str]]:
    kinds = {"Deployment", "Role", "ConfigMap", "CustomResourceDefinition"}
    return {(d["kind"], d["metadata"]["name"]) for d in helm_template() if d["kind"] in kinds}


def test_the_rendered_chart_applies_onto_the_embedded_api(kube: RunningEmulator) -> None:
    manifests = yaml.safe_dump_all(helm_template())
    first = kubectl(kube, "apply", "-n", NAMESPACE, "-f", "-", stdin=manifests)
    assert (
        "deployment.apps/osprov-bridge created" in first
        and "poddisruptionbudget.policy/osprov-bridge created" in first
    )
    assert installed(kube) == expected()
    again = kubectl(kube, "apply", "-n", NAMESPACE, "-f", "-", stdin=manifests).splitlines()
    # Applying again changes nothing. (PodDisruptionBudgets excepted: the emulator's OpenAPI lacks the
    # patch strategy of their selector, so kubectl re-sends it and reports "configured".)
    changed = [line for line in again if not line.endswith(" unchanged")]
    assert [line for line in changed if not line.startswith("poddisruptionbudget.policy/")] == [], again


def test_helm_installs_and_upgrades_the_chart_on_the_embedded_api(kube: RunningEmulator) -> None:
    with helm.Config(namespace=NAMESPACE, kubeconfig_path=kube.kubeconfig) as config:
        release = config.install(str(CHART), "osprov", namespace=NAMESPACE, timeout=120)
        assert (release["status"], release["revision"]) == ("deployed", 1), release
        assert installed(kube) == expected()
        upgraded = config.upgrade(str(CHART), "osprov", {"bridge": {"replicas": 3}}, namespace=NAMESPACE)
        assert (upgraded["status"], upgraded["revision"]) == ("deployed", 2), upgraded
    with kube.api_client() as api:
        bridge: Any = client.AppsV1Api(api).read_namespaced_deployment("osprov-bridge", NAMESPACE)
        releases: list[Any] = (
            client.CoreV1Api(api).list_namespaced_secret(NAMESPACE, label_selector="owner=helm").items
        )
    assert bridge.spec.replicas == 3
    assert bridge.metadata.labels["app.kubernetes.io/managed-by"] == "Helm"
    assert sorted(s.metadata.name for s in releases) == [
        "sh.helm.release.v1.osprov.v1",
        "sh.helm.release.v1.osprov.v2",
    ]
