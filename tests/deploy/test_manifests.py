"""docker-compose.yml, the Dockerfile and deploy/ checked against what the code expects.

Neither Docker nor a real cluster runs here, so these tests read the files and compare them with the
code: the variables the programs read, the commands the CLI has, the search attributes, every kind.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from osprov.api.registry import ALL_KINDS
from osprov.api.search_attributes import SEARCH_ATTRIBUTES
from osprov.cli import BUILTIN
from tests.deploy.compose_rules import interpolate, published

REPO = Path(__file__).resolve().parents[2]


def settings_variables() -> set[str]:
    text = (REPO / "runtime" / "settings.py").read_text()
    return set(re.findall(r'_(?:env|list|flag)\("([A-Z_]+)"', text))


def compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())  # type: ignore[no-any-return]


def manifests(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((REPO / "deploy" / name).read_text()) if d]


def cli_commands() -> set[str]:
    """The commands the production image has: the built-in ones (no dev environment there)."""
    return set(BUILTIN)


# ----- docker-compose -------------------------------------------------------------------------------


def test_compose_has_the_services_and_wiring() -> None:
    services = compose()["services"]
    assert set(services) >= {
        "postgresql",
        "temporal",
        "temporal-setup",
        "temporal-ui",
        "codec-server",
        "worker",
        "bridge",
    }
    for name, svc in services.items():
        for dep in svc.get("depends_on") or {}:
            assert dep in services, f"{name} depends on unknown service {dep}"
        if name != "temporal-setup":
            assert "healthcheck" in svc, f"{name} has no healthcheck"
    assert services["temporal"]["environment"]["DB"].startswith("postgres")
    for name in ("worker", "bridge", "codec-server"):
        assert services[name]["build"] == "." and (REPO / "Dockerfile").exists()
        assert services[name]["command"][0] in cli_commands(), f"{name}: unknown osprov command"


def test_compose_sets_every_variable_the_programs_read() -> None:
    services = compose()["services"]
    for name in ("worker", "bridge"):
        env = services[name]["environment"]
        wanted = settings_variables() - {"OSPROV_KINDS", "OSPROV_ACTIVITY_THREADS"} | {
            "KUBECONFIG",
            "OSPROV_CODEC_KEYS",
        }
        if name == "worker":
            wanted |= {"OS_CLOUD", "OS_CLIENT_CONFIG_FILE", "OSPROV_ACTIVITY_THREADS"}
        assert wanted <= set(env), f"{name} misses {sorted(wanted - set(env))}"
        assert env["OSPROV_TEMPORAL_ADDRESS"].split(":")[0] in services
        port = env["OSPROV_METRICS_PORT"]
        assert any(p.host_port == p.container_port == port for p in map(published, services[name]["ports"]))
        assert port in str(services[name]["healthcheck"]["test"])
        mounted = {v.rsplit(":", 2)[1] for v in services[name]["volumes"]}  # host may contain ${X:-y}
        assert env["KUBECONFIG"] in mounted
        if name == "worker":
            assert env["OS_CLIENT_CONFIG_FILE"] in mounted


def test_compose_registers_the_search_attributes_and_the_ui_uses_the_codec() -> None:
    services = compose()["services"]
    setup = " ".join(services["temporal-setup"]["command"])
    assert set(re.search(r"for sa in ([A-Za-z ]+);", setup).group(1).split()) == set(SEARCH_ATTRIBUTES)  # type: ignore[union-attr]
    assert set(SEARCH_ATTRIBUTES.values()) == {"Keyword"} and "--type Keyword" in setup
    ui = services["temporal-ui"]["environment"]
    codec_port = services["codec-server"]["command"][services["codec-server"]["command"].index("--port") + 1]
    endpoint = interpolate(ui["TEMPORAL_CODEC_ENDPOINT"], {"OSPROV_CODEC_TOKEN": "t"})
    assert urlsplit(endpoint).port == int(codec_port)
    assert published(services["codec-server"]["ports"][0]).host_port == codec_port
    origin = services["codec-server"]["command"][
        services["codec-server"]["command"].index("--cors-origin") + 1
    ]
    assert origin.endswith(":" + published(services["temporal-ui"]["ports"][0]).host_port)


# ----- deploy/ (kustomize base) ---------------------------------------------------------------------


def test_kustomization_lists_every_crd_and_manifest() -> None:
    kustomization = yaml.safe_load((REPO / "deploy" / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    crds = {f"crds/{p.name}" for p in (REPO / "deploy" / "crds").glob("*.yaml")}
    assert crds <= listed
    assert {f"crds/{k.crd_name}.yaml" for k in ALL_KINDS} <= listed
    for item in listed:
        assert (REPO / "deploy" / item).exists(), item


def roles() -> dict[str, list[dict[str, Any]]]:
    return {d["metadata"]["name"]: d["rules"] for d in manifests("rbac.yaml") if d["kind"] == "Role"}


def allowed(role: str, verb: str, group: str, resource: str) -> bool:
    return any(
        group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in roles()[role]
    )


def test_roles_never_create_or_delete() -> None:
    for name, rules in roles().items():
        for rule in rules:
            assert not {"create", "delete", "deletecollection", "*"} & set(rule["verbs"]), name


def test_roles_cover_every_kind() -> None:
    for k in ALL_KINDS:
        for verb in ("get", "list", "watch"):
            assert allowed("osprov-bridge", verb, k.group, k.plural), (verb, k.plural)
        for verb in ("get", "patch", "update"):
            for res in (k.plural, f"{k.plural}/status", f"{k.plural}/finalizers"):
                assert allowed("osprov-worker", verb, k.group, res), (verb, res)
    for verb in ("get", "list", "watch"):
        assert allowed("osprov-bridge", verb, "", "secrets")
    assert allowed("osprov-worker", "get", "", "secrets")


def test_deployments_run_the_right_commands_with_their_service_accounts() -> None:
    bindings = {d["metadata"]["name"]: d for d in manifests("rbac.yaml") if d["kind"] == "RoleBinding"}
    for name, command, replicas in (("worker", "worker", None), ("bridge", "bridge", 1)):
        [deployment] = [d for d in manifests(f"{name}.yaml") if d["kind"] == "Deployment"]
        pod = deployment["spec"]["template"]["spec"]
        container = pod["containers"][0]
        assert container["args"][0] == command and command in cli_commands()
        sa = pod["serviceAccountName"]
        assert bindings[sa]["roleRef"]["name"] == sa and bindings[sa]["subjects"][0]["name"] == sa
        assert container["livenessProbe"] and container["readinessProbe"] and container["resources"]
        if replicas is not None:
            assert (
                deployment["spec"]["replicas"] == replicas
                and deployment["spec"]["strategy"]["type"] == "Recreate"
            )
    [config] = manifests("config.yaml")
    transport = {
        v for v in settings_variables() if v.startswith(("OSPROV_TEMPORAL_TLS", "OSPROV_TEMPORAL_API"))
    }
    assert settings_variables() - {"OSPROV_KINDS"} - transport <= set(
        config["data"]
    )  # transport: components/
    assert any(d["kind"] == "PodDisruptionBudget" for d in manifests("worker.yaml"))


def rbac_allows_audit_line(line: dict[str, Any]) -> tuple[bool, str]:
    """Used by the integration test that replays the emulator's audit log of a real run."""
    role = "osprov-bridge" if line["user_agent"].startswith("osprov-bridge") else "osprov-worker"
    resource = line["resource"] + (f"/{line['subresource']}" if line["subresource"] else "")
    return allowed(
        role, line["verb"], line["group"], resource
    ), f"{role}: {line['verb']} {line['group']}/{resource}"
