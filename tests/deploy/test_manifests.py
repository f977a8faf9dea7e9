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

from devenv import temporal as devenv_temporal
from osprov.activities import tenancy
from osprov.api.registry import ALL_KINDS, INVENTORY_CONFIG, INVENTORY_KINDS
from osprov.api.search_attributes import SEARCH_ATTRIBUTES
from osprov.cli import BUILTIN
from tests.deploy import rbac
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


def test_compose_and_the_local_stack_give_temporal_the_same_dynamic_config() -> None:
    """deploy/temporal/dynamicconfig.yaml (eager activity execution on) is the cluster's dynamic config and
    the dev server's flags: the benchmarks measure the settings an operator deploys."""
    temporal = compose()["services"]["temporal"]
    path = temporal["environment"]["DYNAMIC_CONFIG_FILE_PATH"]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in temporal["volumes"]}
    assert (REPO / mounts[path]).resolve() == devenv_temporal.DYNAMIC_CONFIG
    settings = yaml.safe_load(devenv_temporal.DYNAMIC_CONFIG.read_text())
    assert settings["system.enableActivityEagerExecution"] == [{"value": True}]
    flags = devenv_temporal.dynamic_config_flags()
    assert [flags[i + 1].split("=")[0] for i in range(0, len(flags), 2)] == list(settings)


# Variables only one of the two programs reads.
WORKER_ONLY = {
    "OSPROV_ACTIVITY_THREADS",
    "OSPROV_WORKFLOW_CACHE",
    "OSPROV_WORKFLOW_TASKS",
    "OSPROV_WORKER_HEARTBEAT_SECONDS",
    "OSPROV_WORKFLOW_RUNNER",
    "OSPROV_INVENTORY_CONFIG",
    "OSPROV_INVENTORY_INTERVAL_SECONDS",
}
BRIDGE_ONLY = {
    "OSPROV_LEASE_NAMESPACE",
    "OSPROV_LEASE_NAME",
    "OSPROV_LEASE_DURATION_SECONDS",
    "OSPROV_LEASE_RENEW_DEADLINE_SECONDS",
    "OSPROV_LEASE_RETRY_PERIOD_SECONDS",
}


def test_compose_sets_every_variable_the_programs_read() -> None:
    services = compose()["services"]
    for name in ("worker", "bridge"):
        env = services[name]["environment"]
        other = BRIDGE_ONLY if name == "worker" else WORKER_ONLY
        wanted = settings_variables() - {"OSPROV_KINDS"} - other | {"KUBECONFIG", "OSPROV_CODEC_KEYS"}
        if name == "worker":
            wanted |= {"OS_CLOUD", "OS_CLIENT_CONFIG_FILE"}
        assert wanted <= set(env), f"{name} misses {sorted(wanted - set(env))}"
        assert env["OSPROV_TEMPORAL_ADDRESS"].split(":")[0] in services
        port = env["OSPROV_METRICS_PORT"]
        assert any(p.host_port == p.container_port == port for p in map(published, services[name]["ports"]))
        assert f"localhost:{env['OSPROV_HEALTH_PORT']}/healthz" in str(services[name]["healthcheck"]["test"])
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


def test_roles_create_and_delete_only_the_lease_events_identity_secrets_and_the_inventory() -> None:
    allowed = {
        ("osprov-bridge", "create", "coordination.k8s.io", "leases"),
        ("osprov-worker", "create", "events.k8s.io", "events"),
        ("osprov-worker", "create", "", "secrets"),  # an Identity's credential Secret
    }
    published = {(k.group, k.plural) for k in INVENTORY_KINDS}
    for g in rbac.grants():
        if g.verb in {"create", "delete", "deletecollection", "*"}:
            if g.role == "osprov-worker" and (g.group, g.resource) in published:
                assert g.verb != "deletecollection" and g.verb != "*", g
                continue
            assert (g.role, g.verb, g.group, g.resource) in allowed, g


def test_the_inventory_grants_are_the_registrys_and_users_only_read() -> None:
    """The worker's verbs on each published kind are the registry's (which the CRD annotation carries to the
    Helm chart), its InventoryConfig is only the configured one, and the users' role is read only."""
    [config] = manifests("config.yaml")
    granted = rbac.grants()
    for k in INVENTORY_KINDS:
        verbs = {
            g.verb for g in granted if (g.role, g.group, g.resource) == ("osprov-worker", k.group, k.plural)
        }
        assert verbs == set(k.worker_verbs), k.kind
        assert not any(g.role == "osprov-bridge" and g.inventory for g in granted)
    configs = [g for g in granted if g.resource == INVENTORY_CONFIG.plural]
    assert {(g.role, g.verb, g.names) for g in configs} == {
        ("osprov-worker", "get", (config["data"]["OSPROV_INVENTORY_CONFIG"],))
    }
    [reader] = [d for d in manifests("rbac.yaml") if d["metadata"]["name"] == "osprov-region-reader"]
    assert {v for rule in reader["rules"] for v in rule["verbs"]} == {"get", "list", "watch"}
    assert {r for rule in reader["rules"] for r in rule["resources"]} == {k.plural for k in INVENTORY_KINDS}
    assert reader["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert not [
        d for d in manifests("rbac.yaml") if d.get("roleRef", {}).get("name") == "osprov-region-reader"
    ]


def test_roles_grant_every_kind_alike() -> None:
    """What the integration test proves for the kinds a run exercises holds for all of them."""
    granted = rbac.grants()

    def verbs(role: str, group: str, resource: str) -> set[str]:
        return {g.verb for g in granted if (g.role, g.group, g.resource) == (role, group, resource)}

    for k in ALL_KINDS:
        assert verbs("osprov-bridge", k.group, k.plural) == {"list", "watch"}, k.plural
        assert verbs("osprov-worker", k.group, k.plural) == {"get", "patch"}, k.plural
        assert verbs("osprov-worker", k.group, f"{k.plural}/status") == {"patch"}, k.plural
        assert not verbs("osprov-worker", k.group, f"{k.plural}/finalizers"), k.plural
    assert verbs("osprov-bridge", "", "secrets") == {"list", "watch"}  # as metadata only (bridge/watch.py)
    assert verbs("osprov-worker", "", "secrets") == {"get", "create", "patch"}  # patch: an Identity's own


def test_the_bridge_may_update_only_its_own_lease() -> None:
    [config] = manifests("config.yaml")
    leases = [g for g in rbac.grants() if g.resource == "leases"]
    assert {(g.verb, g.names) for g in leases} == {
        ("create", ()),  # RBAC cannot name an object that does not exist yet
        ("get", (config["data"]["OSPROV_LEASE_NAME"],)),
        ("update", (config["data"]["OSPROV_LEASE_NAME"],)),
    }


def deployment(name: str) -> dict[str, Any]:
    [found] = [d for d in manifests(f"{name}.yaml") if d["kind"] == "Deployment"]
    return found


def test_deployments_run_the_right_commands_with_their_service_accounts() -> None:
    bindings = {d["metadata"]["name"]: d for d in manifests("rbac.yaml") if d["kind"] == "RoleBinding"}
    for name in ("worker", "bridge"):
        pod = deployment(name)["spec"]["template"]["spec"]
        container = pod["containers"][0]
        assert container["args"][0] == name and name in cli_commands()
        sa = pod["serviceAccountName"]
        assert bindings[sa]["roleRef"]["name"] == sa and bindings[sa]["subjects"][0]["name"] == sa
        assert container["resources"]
    [config] = manifests("config.yaml")
    transport = {
        v for v in settings_variables() if v.startswith(("OSPROV_TEMPORAL_TLS", "OSPROV_TEMPORAL_API"))
    }
    # Transport security: the component components/temporal-tls. OSPROV_LEASE_NAMESPACE comes from the
    # pod itself (the downward API).
    assert settings_variables() - {"OSPROV_KINDS", "OSPROV_LEASE_NAMESPACE"} - transport <= set(
        config["data"]
    )
    [lease_ns] = deployment("bridge")["spec"]["template"]["spec"]["containers"][0]["env"]
    assert lease_ns == {
        "name": "OSPROV_LEASE_NAMESPACE",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
    }


def test_two_bridges_and_every_process_probed_on_its_health_endpoints() -> None:
    bridge = deployment("bridge")
    assert bridge["spec"]["replicas"] == 2 and bridge["spec"]["strategy"]["type"] == "RollingUpdate"
    for name in ("worker", "bridge"):
        budgets = [d for d in manifests(f"{name}.yaml") if d["kind"] == "PodDisruptionBudget"]
        assert [b["spec"] for b in budgets] == [
            {"minAvailable": 1, "selector": deployment(name)["spec"]["selector"]}
        ], name
    [config] = manifests("config.yaml")
    health_port = int(config["data"]["OSPROV_HEALTH_PORT"])
    for name in ("worker", "bridge"):
        container = deployment(name)["spec"]["template"]["spec"]["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["health"] == health_port
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            assert container[probe]["httpGet"] == {"path": path, "port": "health"}, (name, probe)
            # A probe that times out fails too: the health server answers from memory, at once.
            assert container[probe]["timeoutSeconds"] >= 1


def test_the_worker_reads_the_tenancy_mapping_from_the_operators_configmap(tmp_path: Path) -> None:
    """OSPROV_TENANCY_FILE names a file of the ConfigMap osprov-tenancy as the worker mounts it; as shipped
    it parses and maps no namespace (everything refused until the operator maps one)."""
    [config] = manifests("config.yaml")
    path = Path(config["data"]["OSPROV_TENANCY_FILE"])
    pod = deployment("worker")["spec"]["template"]["spec"]
    [mount] = [m for m in pod["containers"][0]["volumeMounts"] if Path(m["mountPath"]) == path.parent]
    assert mount["readOnly"] is True
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    [configmap] = manifests("tenancy.yaml")
    assert volume["configMap"]["name"] == configmap["metadata"]["name"] == "osprov-tenancy"
    copy = tmp_path / path.name
    copy.write_text(configmap["data"][path.name])
    mapping = tenancy.load(str(copy))
    assert mapping.namespaces == {} and mapping.roles == list(tenancy.DEFAULT_ROLES)
