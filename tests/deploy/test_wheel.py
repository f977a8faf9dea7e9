"""What `pip install .` installs: one top-level package, no dev environment, and exactly the runtime
dependencies the runtime imports."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("osprov-*.whl")
    return zipfile.ZipFile(path)


def test_one_top_level_package_and_no_dev_environment(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"osprov"}
    for sub in ("api", "runtime", "activities", "workflows", "workflows/keystone", "worker", "bridge"):
        assert f"osprov/{sub}/__init__.py" in names
    assert not [n for n in names if "devenv" in n or "/tests/" in n or "kube/store" in n]
    assert "osprov/py.typed" in names


def _runtime_imports(wheel: zipfile.ZipFile) -> set[str]:
    tops: set[str] = set()
    for name in wheel.namelist():
        if not name.endswith(".py"):
            continue
        for node in ast.walk(ast.parse(wheel.read(name))):
            if isinstance(node, ast.Import):
                tops.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                tops.add(node.module.split(".")[0])
    return {t for t in tops if t not in sys.stdlib_module_names and t not in {"osprov", "__future__"}}


def test_runtime_dependencies_are_what_the_runtime_imports(wheel: zipfile.ZipFile) -> None:
    (meta,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    requires = Parser().parsestr(wheel.read(meta).decode()).get_all("Requires-Dist") or []
    declared = {
        re.split(r"[ ;<>=!\[]", r, maxsplit=1)[0].lower().replace("_", "-")
        for r in requires
        if "extra ==" not in r
    }
    providers = packages_distributions()
    imported = {d.lower().replace("_", "-") for t in _runtime_imports(wheel) for d in providers.get(t, [t])}
    # Libraries whose types the direct dependencies' APIs expose: keystoneauth1 (openstacksdk's sessions),
    # protobuf (temporalio's payloads), urllib3 (the kubernetes client's watch errors).
    transitive = {"keystoneauth1", "protobuf", "urllib3"}
    assert declared == imported - transitive, (declared, imported)
