"""deploy/ and docker-compose.yml: encryption required, Temporal transport security wired, nothing public.

Neither Docker nor a cluster runs here: kustomize (kubectl's, from the dev extra) renders deploy/, and
the compose file is read with compose's own interpolation and port rules (tests/deploy/compose_rules.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.test_manifests import REPO, manifests


def deployment(name: str) -> dict[str, Any]:
    [found] = [d for d in manifests(f"{name}.yaml") if d["kind"] == "Deployment"]
    return found


def test_worker_and_bridge_require_the_codec_secret() -> None:
    for name in ("worker", "bridge"):
        container = deployment(name)["spec"]["template"]["spec"]["containers"][0]
        refs = [e["secretRef"] for e in container["envFrom"] if "secretRef" in e]
        assert {"name": "osprov-codec"} in refs, f"{name}: the osprov-codec Secret is not required"
        assert not any(r.get("optional") for r in refs), f"{name}: an optional Secret"
    [config] = manifests("config.yaml")
    assert config["data"]["OSPROV_REQUIRE_ENCRYPTION"] == "true"


def kustomize(tmp: Path, *components: str) -> list[dict[str, Any]]:
    """Render deploy/ with some of its components through kubectl kustomize, as `kubectl apply -k` would."""
    (tmp / "deploy").symlink_to(REPO / "deploy")  # kustomize takes relative paths only
    overlay = tmp / "overlay"
    overlay.mkdir()
    body = {"resources": ["../deploy"], "components": [f"../deploy/components/{c}" for c in components]}
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(body))
    kubectl = Path(sys.executable).parent / "kubectl"
    out = subprocess.run(
        [str(kubectl), "kustomize", str(overlay)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_the_tls_component_mounts_the_secret_the_settings_name(tmp_path: Path) -> None:
    docs = kustomize(tmp_path, "temporal-tls")
    [settings] = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "osprov-settings"]
    data = settings["data"]
    assert data["OSPROV_TEMPORAL_TLS"] == "true"
    files = [
        data[k] for k in ("OSPROV_TEMPORAL_TLS_CA", "OSPROV_TEMPORAL_TLS_CERT", "OSPROV_TEMPORAL_TLS_KEY")
    ]
    for name in ("osprov-worker", "osprov-bridge"):
        [dep] = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == name]
        pod = dep["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        container = pod["containers"][0]
        assert {"configMapRef": {"name": "osprov-settings"}} in container["envFrom"]
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        for path in files:
            mount = mounts[str(Path(path).parent)]
            assert mount["readOnly"], f"{name}: {path} is writable"
            assert volumes[mount["name"]]["secret"]["secretName"] == "osprov-temporal-tls"


def test_without_the_component_transport_security_is_not_configured(tmp_path: Path) -> None:
    [settings] = [d for d in kustomize(tmp_path) if d["kind"] == "ConfigMap"]
    assert not [k for k in settings["data"] if k.startswith("OSPROV_TEMPORAL_TLS")]
