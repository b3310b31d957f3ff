"""Service files for the daemon: a systemd user unit (Linux) and a launchd agent (macOS).

`tidemind daemon install-service` writes the one for this platform (or both into --dir) and
prints the command that enables it; it never starts anything itself.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from xml.sax.saxutils import escape

LABEL = "dev.tidemind.daemon"


def command(home: str | None) -> list[str]:
    exe = shutil.which("tidemind")
    base = [exe] if exe else [sys.executable, "-m", "tidemind.cli"]
    return base + (["--home", str(Path(home).expanduser().resolve())] if home else []) + ["daemon"]


def systemd_unit(home: str | None) -> str:
    import shlex

    return f"""[Unit]
Description=TideMind memory metabolism (tagging, linking, decay)
After=default.target

[Service]
Type=simple
ExecStart={' '.join(shlex.quote(p) for p in command(home))}
Restart=on-failure
RestartSec=30
KillSignal=SIGTERM
TimeoutStopSec=10
Nice=10

[Install]
WantedBy=default.target
"""


def launchd_plist(home: str | None) -> str:
    args = "\n".join(f"    <string>{escape(p)}</string>" for p in command(home))
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>{LABEL}</string>
  <key>ProgramArguments</key>
  <array>
{args}
  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>ProcessType</key>
  <string>Background</string>
  <key>StandardErrorPath</key>
  <string>/tmp/tidemind-daemon.log</string>
</dict>
</plist>
"""


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
