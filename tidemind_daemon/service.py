"""Service files for the daemon: a systemd user unit (Linux) and a launchd agent (macOS).

`tidemind daemon install-service` writes the one for this platform (or both into --dir) and
prints the command that enables it; it never starts anything itself. A service starts with
none of the shell's environment: the unit reads `service.env` in the home (EnvironmentFile; made
readable by its owner only, with the TideMind settings of the shell that installed it, and the
API key left for the person to add: TideMind never writes a key into a file), and the launchd
agent carries the same settings. `tidemind daemon uninstall-service` removes what
install-service wrote. The daemon logs to stderr: journald for the systemd unit
(`journalctl --user -u tidemind`), `daemon.log` in the home for launchd.
"""
from __future__ import annotations

import shutil
import sys
from importlib import resources
from pathlib import Path
from string import Template
from xml.sax.saxutils import escape

LABEL = "dev.tidemind.daemon"


ENV_FILE = "service.env"
# what the shell's environment may say that a service needs; never a key (said, not written)
CARRIED = ("TIDEMIND_STORE", "TIDEMIND_LLM", "TIDEMIND_EMBEDDER", "TIDEMIND_OLLAMA_HOST", "OLLAMA_HOST",
           "TIDEMIND_OLLAMA_MODEL", "TIDEMIND_ANTHROPIC_MODEL", "TIDEMIND_OLLAMA_CHAT_MODEL", "ANTHROPIC_BASE_URL")
SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def _home(home: str | None) -> Path:
    from tidemind.config import resolve_home

    return resolve_home(home)


def carried_environment() -> dict[str, str]:
    import os

    return {k: os.environ[k] for k in CARRIED if os.environ.get(k) and "\n" not in os.environ[k]}


def command(home: str | None) -> list[str]:
    exe = shutil.which("tidemind")
    base = [exe] if exe else [sys.executable, "-m", "tidemind.cli"]
    return base + (["--home", str(Path(home).expanduser().resolve())] if home else []) + ["daemon"]


def _template(name: str) -> Template:
    # shipped as package data, so an installed wheel has them (never read from a source tree)
    return Template(resources.files("tidemind_daemon").joinpath("templates", name).read_text(encoding="utf-8"))


def systemd_unit(home: str | None) -> str:
    import shlex

    return _template("tidemind.service").substitute(exec_start=" ".join(shlex.quote(p) for p in command(home)),
                                                    environment_file=str(_home(home) / ENV_FILE))


def launchd_plist(home: str | None) -> str:
    args = "\n".join(f"    <string>{escape(p)}</string>" for p in command(home))
    env = "\n".join(f"    <key>{escape(k)}</key>\n    <string>{escape(v)}</string>" for k, v in carried_environment().items())
    return _template("launchd.plist").substitute(label=escape(LABEL), program_arguments=args, environment=env,
                                                 log=escape(str(_home(home) / "daemon.log")))


def _environment_file(home: str | None) -> tuple[Path, bool]:
    """`service.env` in the home, made (owner-only) when missing; (its path, made now)."""
    import os

    path = _home(home) / ENV_FILE
    if path.exists():
        return path, False
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["# the environment of the TideMind daemon's service (systemd EnvironmentFile): NAME=value lines",
             "# written by `tidemind daemon install-service` from the shell that ran it; edit freely"]
    lines += [f"{k}={v}" for k, v in carried_environment().items()]
    lines += [f"# {k}=" for k in SECRETS]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path, True


def _service_files(directory: str | None) -> dict[str, Path]:
    if directory:
        target = Path(directory).expanduser()
        return {"systemd": target / "tidemind.service", "launchd": target / f"{LABEL}.plist"}
    if sys.platform == "darwin":
        return {"launchd": Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"}
    return {"systemd": Path.home() / ".config" / "systemd" / "user" / "tidemind.service"}


def install(home: str | None, directory: str | None = None) -> dict:
    import os

    written = {}
    files = _service_files(directory)
    notes = []
    if "systemd" in files:
        env_path, made = _environment_file(home)
        written["environment"] = str(env_path)
        if not made:
            notes.append(f"{env_path} was there already and is kept as it is")
    missing = [k for k in SECRETS if os.environ.get(k)]
    if missing:
        notes.append(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} set in this shell, and a service"
                     f" does not see it: add it to {_home(home) / ENV_FILE} (readable by you only)"
                     + (" or to the agent's EnvironmentVariables" if "launchd" in files else ""))
    for kind, path in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(systemd_unit(home) if kind == "systemd" else launchd_plist(home), encoding="utf-8")
        written[kind] = str(path)
    enable = []
    if "systemd" in written:
        enable.append("systemctl --user daemon-reload && systemctl --user enable --now tidemind.service")
    if "launchd" in written:
        enable.append(f"launchctl load -w {written['launchd']}")
    return {"written": written, "enable_with": enable, "notes": notes}


def uninstall(directory: str | None = None) -> dict:
    """Remove the service files install wrote (and systemd's enablement link); the environment
    file in the home is the person's, and stays. Says what to run to stop a running service."""
    files = _service_files(directory)
    removed = []
    if "systemd" in files and not directory:
        files["wants"] = files["systemd"].parent / "default.target.wants" / "tidemind.service"
    for kind, path in files.items():
        if path.is_symlink() or path.exists():
            path.unlink()
            removed.append(str(path))
    then = []
    if "systemd" in files:
        then.append("systemctl --user stop tidemind.service; systemctl --user daemon-reload")
    if "launchd" in files:
        then.append(f"launchctl remove {LABEL}")
    return {"removed": removed, "then": then}
