"""The import graph points one way, has no cycles, and the wheel holds exactly the product.

Layers, bottom to top (a module imports only from its own layer or lower ones, never sideways
between the two halves of a layer):

    osprov.api            pure models and names: the contract between every other part
    osprov.runtime        process plumbing: settings, logs, the Temporal client, codec, metrics, kube config
    osprov.activities  |  osprov.workflows     I/O (one call each)  |  decisions (no I/O, Temporal's sandbox)
    osprov.worker      |  osprov.bridge        the two processes
    osprov (cli, codec_server)                 the command line on top
    devenv                                     the dev-only distribution: the local stack, the demo

Imports are read statically (every `import` statement, in functions too), so a lazy import cannot
hide an upward edge.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE_DIRS: dict[str, str] = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"][
    "package-dir"
]

# (layer, side): a module may import a module of a lower layer, or of its own layer and side.
LAYERS: dict[str, tuple[int, str]] = {
    "osprov.api": (0, ""),
    "osprov.runtime": (1, ""),
    "osprov.activities": (2, "io"),
    "osprov.workflows": (2, "decisions"),
    "osprov.worker": (3, "worker"),
    "osprov.bridge": (3, "bridge"),
    "osprov": (4, ""),
    "devenv": (5, ""),
}
# Workflow code runs in Temporal's sandbox and is replayed: besides the product's pure layer it may
# import only these (no HTTP client, no Kubernetes or OpenStack library, no clock or randomness).
WORKFLOW_THIRD_PARTY = {"temporalio", "pydantic", "__future__"}


def module_files() -> Iterator[tuple[str, Path]]:
    """Every module of the product (named as installed) and of the dev environment."""
    roots = dict(PACKAGE_DIRS) | {"devenv": "devenv"}
    for package, folder in roots.items():
        for path in sorted((REPO / folder).glob("*.py")):
            stem = path.stem
            yield (package if stem == "__init__" else f"{package}.{stem}"), path
    for sub in sorted((REPO / "devenv").glob("*/__init__.py")):
        for path in sorted(sub.parent.glob("*.py")):
            pkg = f"devenv.{sub.parent.name}"
            yield (pkg if path.stem == "__init__" else f"{pkg}.{path.stem}"), path


MODULES = dict(module_files())


def imports(module: str, path: Path) -> set[str]:
    """Absolute names of everything `module` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            found.add(prefix)
            # `from osprov.api import registry` imports the module osprov.api.registry
            found.update(f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in MODULES)
    return found


GRAPH = {m: {i for i in imports(m, p) if i in MODULES} for m, p in MODULES.items()}


def layer_of(module: str) -> tuple[int, str]:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def test_every_module_belongs_to_a_layer() -> None:
    assert len(MODULES) > 60
    for module in MODULES:
        layer_of(module)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down(module: str) -> None:
    level, side = layer_of(module)
    for target in sorted(GRAPH[module]):
        t_level, t_side = layer_of(target)
        ok = t_level < level or (t_level == level and (t_side == side or not side))
        assert ok, f"{module} (layer {level}{' ' + side if side else ''}) imports {target} (layer {t_level})"


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components: every component is a single module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == []


def test_workflow_modules_import_no_io_library() -> None:
    for module, path in MODULES.items():
        if not module.startswith("osprov.workflows"):
            continue
        for name in imports(module, path):
            top = name.split(".")[0]
            if top == "osprov":
                assert name.startswith(("osprov.api", "osprov.workflows")), f"{module} imports {name}"
            else:
                assert top in WORKFLOW_THIRD_PARTY or top in sys.stdlib_module_names, (
                    f"{module} imports {name}"
                )
                assert top not in {"socket", "http", "urllib", "subprocess", "random", "time", "threading"}, (
                    f"{module} imports {name}"
                )


def test_the_wheel_lists_every_package_folder() -> None:
    """A package folder missing from [tool.setuptools] packages would silently be left out of the wheel."""
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    for package, folder in PACKAGE_DIRS.items():
        for init in (REPO / folder).glob("*/__init__.py"):
            sub = f"{package}.{init.parent.name}"
            assert sub in listed or sub in PACKAGE_DIRS, f"{sub} ({init.parent}) is not in the wheel"
    assert listed == {p for p in listed if p.split(".")[0] == "osprov"}


def test_nothing_imports_the_old_top_level_names() -> None:
    """Before the one-import-root layout these were top-level packages; from the repo root they would still
    import (the folders exist) and silently load a second copy of a module."""
    old = {"api", "activities", "workflows", "bridge", "worker", "runtime"}
    offenders = []
    for path in [
        *REPO.glob("tests/**/*.py"),
        *REPO.glob("bench/*.py"),
        *REPO.glob("examples/*.py"),
        *MODULES.values(),
    ]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            offenders += [f"{path.relative_to(REPO)}: {n}" for n in names if n.split(".")[0] in old]
    assert offenders == []
