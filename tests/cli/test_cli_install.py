"""Installing modelwire for real: build the wheel and sdist, install the wheel into a fresh venv
(no system site-packages, dependencies from the package index) and run `modelwire demo` from it.

The catalog data (`catalog.json`) and `py.typed` must ship in the wheel, or the installed demo and
`modelwire models` break. Marked `slow`; skipped without the `build` frontend (a dev dependency)
or without a connection to the package index.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from test_cli_fresh_clone import _index_reachable

ROOT = Path(__file__).resolve().parents[2]


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.mark.slow
def test_the_built_wheel_installs_into_a_fresh_venv_and_runs_the_demo(tmp_path: Path) -> None:
    try:
        import build  # noqa: F401  (the PEP 517 frontend)
    except ImportError:
        pytest.skip("the `build` frontend is not installed (pip install -e '.[dev]')")
    if not _index_reachable():
        pytest.skip("the package index (PyPI) is not reachable")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HOME=str(tmp_path / "home"), XDG_DATA_HOME=str(tmp_path / "home" / "data"))
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(dist)], env, ROOT)
    (wheel,) = dist.glob("modelwire-*.whl")
    (sdist,) = dist.glob("modelwire-*.tar.gz")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "modelwire = modelwire.cli:main" in archive.read(entry_points).decode()
    for shipped in (
        "modelwire/adapters/providers/catalog.json",
        "modelwire/py.typed",
        "modelwire/__main__.py",
        "modelwire/cli/app.py",
    ):
        assert shipped in names, shipped
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}
    assert {
        "pyproject.toml",
        "README.md",
        "src/modelwire/adapters/providers/catalog.json",
    } <= members

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], env, tmp_path)
    bin_dir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], env, tmp_path)
    demo = _run([str(bin_dir / "modelwire"), "demo", "--delay-ms", "0"], env, tmp_path)
    assert "550 minutes" in demo.stdout
    listed = _run([str(bin_dir / "modelwire"), "models", "openai", "--json"], env, tmp_path)
    assert '"route":"openai"' in listed.stdout  # the catalog data came with the wheel
    version = _run([str(bin_dir / "python"), "-m", "modelwire", "--version"], env, tmp_path)
    assert version.stdout.startswith("modelwire ") and "unknown" not in version.stdout
