"""What ``engine_flow.py`` needs beyond this package, installed on first use.

- :func:`ensure_module`: a Python package importable by this interpreter (``asyncpg`` for
  messagefoundry's PostgreSQL store): ``python -m pip install`` into the running interpreter's
  environment when the import fails. The engine child processes run on the same interpreter
  (``sys.executable``), so they see it too.
- :func:`postgres_bindir`: the directory holding the PostgreSQL server binaries (``initdb``,
  ``pg_ctl``, ``postgres``): ``$PG_BINDIR``, else the newest ``/usr/lib/postgresql/<v>/bin``
  (Debian's layout), else the directory ``initdb`` on ``PATH`` resolves to; when there is none,
  ``apt-get install -y postgresql`` (as root, or through ``sudo -n``), else an error that says what
  to install.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["DependencyError", "ensure_module", "postgres_bindir"]

SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")


class DependencyError(RuntimeError):
    """A dependency is missing and could not be installed."""


def _say(message: str) -> None:
    print(f"[deps] {message}", file=sys.stderr, flush=True)


def ensure_module(module: str, requirement: str | None = None) -> ModuleType:
    """Import ``module``; when that fails, ``pip install requirement`` (default: ``module``) into
    this interpreter's environment and import it again."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    requirement = requirement or module
    _say(f"{module} is not importable: installing {requirement!r} with {sys.executable} -m pip")
    pip = [sys.executable, "-m", "pip"]
    if subprocess.run([*pip, "--version"], capture_output=True, check=False).returncode != 0:
        # A bare interpreter (e.g. a venv made with --without-pip): bootstrap pip first.
        subprocess.run([sys.executable, "-m", "ensurepip", "--upgrade"], check=False)
    done = subprocess.run(
        [*pip, "install", "--disable-pip-version-check", requirement],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        hint = ""
        if "externally-managed-environment" in done.stderr:
            hint = (
                "\nThis interpreter's environment is managed by the system (PEP 668): run the "
                "benchmark from a virtual environment, or install the package with the system's "
                "package manager."
            )
        raise DependencyError(
            f"could not install {requirement!r} into {sys.prefix} "
            f"(pip exited with {done.returncode}):\n{done.stderr.strip()[-2000:]}{hint}"
        )
    importlib.invalidate_caches()
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise DependencyError(f"installed {requirement!r} but `import {module}` fails: {e}") from e


def _version_key(bindir: Path) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in bindir.parent.name.split("."))
    except ValueError:
        return (0,)


def _find_bindir() -> Path | None:
    def complete(d: Path) -> bool:
        return all(os.access(d / b, os.X_OK) for b in SERVER_BINARIES)

    override = os.environ.get("PG_BINDIR")
    if override:
        if not complete(Path(override)):
            raise DependencyError(
                f"PG_BINDIR={override} does not hold {', '.join(SERVER_BINARIES)}"
            )
        return Path(override)
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    for d in debian:
        if complete(d):
            return d
    on_path = shutil.which("initdb")
    if on_path is not None:
        d = Path(on_path).resolve().parent  # /usr/local/bin/initdb may link into a versioned dir
        if complete(d):
            return d
    return None


def _apt_install(packages: list[str]) -> None:
    apt = shutil.which("apt-get")
    if apt is None:
        raise DependencyError(
            "no PostgreSQL server binaries (initdb, pg_ctl, postgres) and no apt-get to install "
            "them: install PostgreSQL's server package, or set PG_BINDIR to its bin directory"
        )
    if os.geteuid() == 0:
        prefix: list[str] = []
    elif shutil.which("sudo") is not None and (
        subprocess.run(["sudo", "-n", "true"], capture_output=True, check=False).returncode == 0
    ):
        prefix = ["sudo", "-n"]
    else:
        raise DependencyError(
            "no PostgreSQL server binaries (initdb, pg_ctl, postgres), and installing them needs "
            f"root: run `sudo apt-get install -y {' '.join(packages)}` (or set PG_BINDIR)"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*prefix, apt, "install", "-y", "--no-install-recommends", *packages]
    _say(f"no PostgreSQL server binaries: {' '.join(install)}")
    if subprocess.run(install, env=env, check=False).returncode == 0:
        return
    # A fresh image often has empty package lists: refresh them once and retry.
    _say("apt-get install failed: apt-get update, then once more")
    subprocess.run([*prefix, apt, "update"], env=env, check=False)
    if subprocess.run(install, env=env, check=False).returncode != 0:
        raise DependencyError(
            f"`{' '.join(install)}` failed (see its output above): install PostgreSQL's server "
            "binaries yourself, or set PG_BINDIR to their directory"
        )


def postgres_bindir(*, install: bool = True) -> Path:
    """The PostgreSQL server binaries' directory, installing Debian's ``postgresql`` package
    when there is none and ``install`` is set."""
    found = _find_bindir()
    if found is not None:
        return found
    if not install:
        raise DependencyError(
            "no PostgreSQL server binaries (initdb, pg_ctl, postgres) under /usr/lib/postgresql/*/bin "
            "or on PATH: apt-get install postgresql (or set PG_BINDIR)"
        )
    _apt_install(["postgresql"])
    found = _find_bindir()
    if found is None:
        raise DependencyError(
            "apt-get installed postgresql, yet no initdb/pg_ctl/postgres under "
            "/usr/lib/postgresql/*/bin: set PG_BINDIR to their directory"
        )
    _say(f"PostgreSQL server binaries: {found}")
    return found
