"""deploy/ and docker-compose.yml: encryption required, Temporal transport security wired, nothing public.

Neither Docker nor a cluster runs here: kustomize (kubectl's, from the dev extra) renders deploy/, and
the compose file is read with compose's own interpolation and port rules (tests/deploy/compose_rules.py).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.deploy.compose_rules import MissingVariable, interpolate, interpolated, published
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
    [settings] = [
        d
        for d in kustomize(tmp_path)
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "osprov-settings"
    ]
    assert not [k for k in settings["data"] if k.startswith("OSPROV_TEMPORAL_TLS")]


# ----- docker-compose.yml ---------------------------------------------------------------------------

# What .env.example asks for (compose refuses the file without them: `${VAR:?…}`).
REQUIRED = {"OSPROV_CODEC_KEYS": "k1:x", "OSPROV_CODEC_TOKEN": "t" * 43}


def compose_config(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The compose file as `docker compose config` resolves it with this environment."""
    raw = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return interpolated(raw, REQUIRED | (env or {}))  # type: ignore[no-any-return]


def test_compose_publishes_every_port_on_loopback_only() -> None:
    services = compose_config()["services"]
    seen = []
    for name, svc in services.items():
        assert svc.get("network_mode") != "host", f"{name} shares the host's network (every interface)"
        for entry in svc.get("ports", []):
            port = published(entry)
            assert port.loopback_only, f"{name} publishes {entry!r} on every interface"
            seen.append(port.container_port)
    assert {"7233", "8080", "8081", "9464", "9465"} <= set(seen)


def test_compose_port_rules_flag_what_docker_binds_to_every_interface() -> None:
    """The rules above, on the forms compose accepts (so the previous test cannot pass by misreading)."""
    public: list[str | int | dict[str, Any]] = [
        "7233:7233",
        7233,
        "7233",
        "0.0.0.0:7233:7233",
        "[::]:7233:7233",
        {"target": 7233, "published": 7233},
    ]
    private: list[str | int | dict[str, Any]] = [
        "127.0.0.1:7233:7233",
        "127.0.0.1:7233:7233/tcp",
        "[::1]:7233:7233",
        "::1:7233:7233",
        {"target": 7233, "published": 7233, "host_ip": "127.0.0.1"},
    ]
    assert not any(published(p).loopback_only for p in public)
    assert all(published(p).loopback_only for p in private)
    assert published(interpolate("${IP:-127.0.0.1}:8080:80", {"IP": "0.0.0.0"})).host_ip == "0.0.0.0"
    assert published(interpolate("${IP:-127.0.0.1}:8080:80", {})).loopback_only
    with pytest.raises(MissingVariable):
        interpolate("${OSPROV_CODEC_TOKEN:?set it}", {})
    assert interpolate("$${NOT} ${A-x} ${B:+y} $C", {"A": "", "B": "1", "C": "c"}) == "${NOT}  y c"


def test_compose_web_ui_is_read_only_unless_asked() -> None:
    ui = compose_config()["services"]["temporal-ui"]["environment"]
    assert ui["TEMPORAL_DISABLE_WRITE_ACTIONS"] == "true"
    asked = compose_config({"TEMPORAL_DISABLE_WRITE_ACTIONS": "false"})["services"]["temporal-ui"]
    assert asked["environment"]["TEMPORAL_DISABLE_WRITE_ACTIONS"] == "false"


def test_compose_codec_server_needs_its_token_and_does_not_encode_by_default() -> None:
    raw = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    with pytest.raises(MissingVariable, match="OSPROV_CODEC_TOKEN"):
        interpolated(raw, {"OSPROV_CODEC_KEYS": "k1:x"})
    services = compose_config()["services"]
    codec = services["codec-server"]
    assert codec["environment"]["OSPROV_CODEC_TOKEN"] == REQUIRED["OSPROV_CODEC_TOKEN"]
    assert codec["environment"]["OSPROV_CODEC_ENABLE_ENCODE"] == "false"
    assert "--enable-encode" not in codec["command"]
    # The UI (no OIDC login here) presents the token as the endpoint's first path segment.
    endpoint = services["temporal-ui"]["environment"]["TEMPORAL_CODEC_ENDPOINT"]
    assert (
        urlsplit(endpoint).path == "/" + REQUIRED["OSPROV_CODEC_TOKEN"]
        and "--token-in-path" in codec["command"]
    )
    for name in ("worker", "bridge"):
        assert services[name]["environment"]["OSPROV_REQUIRE_ENCRYPTION"] == "true"


def test_readme_documents_every_variable_the_programs_read() -> None:
    sources = [
        *(REPO / "runtime").glob("*.py"),
        REPO / "osprov" / "codec_server.py",
        REPO / "worker" / "__main__.py",
    ]
    read = {v for p in sources for v in re.findall(r'"(OSPROV_[A-Z_]+)"', p.read_text())}
    assert {"OSPROV_TEMPORAL_TLS_CA", "OSPROV_CODEC_TOKEN", "OSPROV_REQUIRE_ENCRYPTION"} <= read
    readme = (REPO / "README.md").read_text()
    missing = sorted(v for v in read if f"`{v}`" not in readme)
    assert not missing, f"README.md's variable table misses {missing}"
