#!/usr/bin/env python3
"""Set-up and entry point for a fresh machine that has nothing but Python.

    python3 dev.py demo     # make .venv if needed, install TideMind, run `tidemind demo`
    python3 dev.py test     # same install plus test extras, run the whole test suite
    python3 dev.py bench [ARGS...]   # run `tidemind bench ARGS`

The venv is rebuilt only when pyproject.toml changed since the last install.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("TIDEMIND_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".tidemind-installed"


def ensure_venv() -> None:
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == want:
        return
    if not (BIN / "python").exists():
        print(f"creating {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("installing tidemind and its test extras (first run only) ...", flush=True)
    subprocess.run([str(BIN / "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", "-e", f"{ROOT}[test]"], check=True)
    STAMP.write_text(want)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"demo", "test", "bench"}:
        print(__doc__)
        return 2
    ensure_venv()
    env = dict(os.environ)
    if argv[0] == "test":
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
        # the whole suite runs a worker per core (pytest-xdist), each test file in one worker;
        # TIDEMIND_TEST_WORKERS=1 runs it in this one process (or give pytest's -n yourself)
        workers = os.environ.get("TIDEMIND_TEST_WORKERS", "auto")
        parallel = [] if workers == "1" or "-n" in argv[1:] else ["-n", workers, "--dist", "loadfile"]
        return subprocess.call([str(BIN / "python"), "-m", "pytest", "-q", *parallel, *argv[1:]], cwd=ROOT, env=env)
    return subprocess.call([str(BIN / "tidemind"), *argv], env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
