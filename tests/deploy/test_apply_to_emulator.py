"""`kubectl apply -k deploy/` against the embedded Kubernetes API, as a user would install osprov."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from devenv.kube.testing import run_emulator

REPO = Path(__file__).resolve().parents[2]
KUBECTL = str(Path(sys.executable).parent / "kubectl")


def test_kubectl_apply_k_deploy_installs_every_object(tmp_path: Path) -> None:
    kustomization = yaml.safe_load((REPO / "deploy" / "kustomization.yaml").read_text())
    namespace = kustomization["namespace"]
    with run_emulator(tmp_path) as kube:
        env = {**os.environ, "KUBECONFIG": kube.kubeconfig, "KUBECACHEDIR": kube.kubectl_cache_dir}

        def kubectl(*args: str) -> str:
            result = subprocess.run(
                [KUBECTL, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
            )
            assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
            return result.stdout

        kubectl("create", "namespace", namespace)  # the kustomization installs into it, it does not create it
        first = kubectl("apply", "-k", "deploy/")
        for expected in (
            "customresourcedefinition.apiextensions.k8s.io/projects.keystone.osh.openstack.org created",
            "serviceaccount/osprov-bridge created",
            "role.rbac.authorization.k8s.io/osprov-worker created",
            "rolebinding.rbac.authorization.k8s.io/osprov-bridge created",
            "configmap/osprov-settings created",
            "deployment.apps/osprov-worker created",
            "deployment.apps/osprov-bridge created",
            "poddisruptionbudget.policy/osprov-worker created",
        ):
            assert expected in first, first
        again = kubectl("apply", "-k", "deploy/")
        assert "created" not in again and "deployment.apps/osprov-worker unchanged" in again, again
        with kube.api_client() as api:
            worker: Any = client.AppsV1Api(api).read_namespaced_deployment("osprov-worker", namespace)
            role: Any = client.RbacAuthorizationV1Api(api).read_namespaced_role("osprov-bridge", namespace)
            settings: Any = client.CoreV1Api(api).read_namespaced_config_map("osprov-settings", namespace)
        assert worker.spec.template.spec.service_account_name == "osprov-worker"
        assert worker.metadata.labels == {"app.kubernetes.io/part-of": "osprov"}
        manifest = next(
            d for d in yaml.safe_load_all((REPO / "deploy" / "rbac.yaml").read_text()) if d["kind"] == "Role"
        )
        assert [r.resources for r in role.rules] == [r["resources"] for r in manifest["rules"]]
        assert settings.data["OSPROV_NAMESPACES"] == namespace
        listing = kubectl("get", "deployments,serviceaccounts,pdb", "-n", namespace, "-o", "name")
        assert set(listing.split()) == {
            "deployment.apps/osprov-bridge",
            "deployment.apps/osprov-worker",
            "serviceaccount/osprov-bridge",
            "serviceaccount/osprov-worker",
            "poddisruptionbudget.policy/osprov-worker",
            "poddisruptionbudget.policy/osprov-bridge",
        }
