"""Service files for the daemon: a systemd user unit (Linux) and a launchd agent (macOS).

`tidemind daemon install-service` writes the one for this platform (or both into --dir) and
prints the command that enables it; it never starts anything itself.
"""
from __future__ import annotations

import shutil
import sys
from importlib import resources
from pathlib import Path
from string import Template
from xml.sax.saxutils import escape

LABEL = "dev.tidemind.daemon"


def command(home: str | None) -> list[str]:
    exe = shutil.which("tidemind")
    base = [exe] if exe else [sys.executable, "-m", "tidemind.cli"]
    return base + (["--home", str(Path(home).expanduser().resolve())] if home else []) + ["daemon"]


def _template(name: str) -> Template:
    # shipped as package data, so an installed wheel has them (never read from a source tree)
    return Template(resources.files("tidemind_daemon").joinpath("templates", name).read_text(encoding="utf-8"))


def systemd_unit(home: str | None) -> str:
    import shlex

    return _template("tidemind.service").substitute(exec_start=" ".join(shlex.quote(p) for p in command(home)))


def launchd_plist(home: str | None) -> str:
    args = "\n".join(f"    <string>{escape(p)}</string>" for p in command(home))
    return _template("launchd.plist").substitute(label=escape(LABEL), program_arguments=args)


def install(home: str | None, directory: str | None = None) -> dict:
    written = {}
    if directory:
        target = Path(directory).expanduser()
        target.mkdir(parents=True, exist_ok=True)
        files = {"systemd": target / "tidemind.service", "launchd": target / f"{LABEL}.plist"}
    elif sys.platform == "darwin":
        files = {"launchd": Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"}
    else:
        files = {"systemd": Path.home() / ".config" / "systemd" / "user" / "tidemind.service"}
    for kind, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(systemd_unit(home) if kind == "systemd" else launchd_plist(home), encoding="utf-8")
        written[kind] = str(path)
    enable = []
    if "systemd" in written:
        enable.append("systemctl --user daemon-reload && systemctl --user enable --now tidemind.service")
    if "launchd" in written:
        enable.append(f"launchctl load -w {written['launchd']}")
    return {"written": written, "enable_with": enable}
