import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from tidemind.memory import Memory  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


class StepClock:
    """A deterministic clock: each call advances one second from a fixed start."""

    def __init__(self, start=dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.timezone.utc)):
        self.now = start

    def __call__(self):
        self.now += dt.timedelta(seconds=1)
        return self.now


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def mem(home):
    m = Memory.open(home, clock=StepClock())
    yield m
    m.close()


def run_cli(home, *args, stdin: bytes | None = None, check_json=True):
    env = dict(os.environ, TIDEMIND_HOME=str(home))
    proc = subprocess.run([sys.executable, "-m", "tidemind.cli", *args], input=stdin, capture_output=True,
                          env=env, cwd=ROOT, timeout=120)
    return proc


def cli_json(home, *args, stdin: bytes | None = None):
    proc = run_cli(home, "--json", *args, stdin=stdin)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


@pytest.fixture
def cli(home):
    def call(*args, stdin=None):
        return cli_json(home, *args, stdin=stdin)
    return call
