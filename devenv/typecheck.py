"""`python -m devenv.typecheck`: mypy over the product as it is installed, plus tests and the dev environment.

mypy cannot follow setuptools' package-dir mapping (`osprov.api` is the folder api/), so this lays the
package out as the wheel does — a link tree under .state/typecheck/osprov whose entries point back at the
real files — and checks `-p osprov` through it (strict, per pyproject.toml), then devenv, tests and bench.
The mapping is read from pyproject.toml, so it is never written twice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TREE = REPO / ".state" / "typecheck"
CHECKED_TOO = ["devenv", "tests", "bench", "examples"]


def package_dirs() -> dict[str, str]:
    """{"osprov": "osprov", "osprov.api": "api", …} from pyproject.toml."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    return mapping


def build_tree() -> Path:
    shutil.rmtree(TREE, ignore_errors=True)
    for package, folder in package_dirs().items():
        target = TREE.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for entry in (REPO / folder).iterdir():
            if entry.name == "__pycache__" or (entry.is_dir() and not (entry / "__init__.py").exists()):
                continue
            if entry.is_dir() and f"{package}.{entry.name}" in package_dirs():
                continue  # laid out by its own mapping entry
            os.symlink(entry, target / entry.name)
    return TREE


def main() -> int:
    tree = build_tree()
    env = dict(os.environ, MYPYPATH=str(tree))
    args = [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml")]
    product = subprocess.run([*args, "--strict", "-p", "osprov"], cwd=REPO, env=env, check=False)
    rest = subprocess.run([*args, *CHECKED_TOO], cwd=REPO, env=env, check=False)
    return product.returncode or rest.returncode


if __name__ == "__main__":
    raise SystemExit(main())
