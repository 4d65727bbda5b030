"""A private PostgreSQL cluster for the tests: initdb into a temporary folder, trust
authentication on a socket in that folder and on 127.0.0.1, stopped and removed at the end."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.servers import free_port


class ClusterError(Exception):
    """The cluster could not be made or started; the message says which step and why."""


def _bindir() -> Path:
    """The folder holding initdb and pg_ctl: pg_config's, else the newest Debian one."""
    try:
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                               check=True).stdout.strip()
        if (Path(found) / "initdb").exists():
            return Path(found)
    except (OSError, subprocess.CalledProcessError):
        pass
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if not versions:
        raise ClusterError("no initdb found (pg_config --bindir, /usr/lib/postgresql/*/bin); "
                           "install the PostgreSQL server or set FOURFOLD_TEST_POSTGRES")
    return Path(versions[-1]).parent


class Cluster:
    def __init__(self) -> None:
        self.bindir = _bindir()
        self.folder = Path(tempfile.mkdtemp(prefix="fourfold-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        # PostgreSQL refuses to run as root: root runs it as the postgres user
        self.as_root = os.geteuid() == 0
        if self.as_root:
            try:
                shutil.chown(self.folder, "postgres", "postgres")
            except (LookupError, OSError) as exc:
                shutil.rmtree(self.folder, ignore_errors=True)
                raise ClusterError(f"cannot give {self.folder} to the postgres user: {exc}"
                                   ) from exc

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, step: str, *args: str) -> None:
        command = [str(self.bindir / step), *args]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        try:
            subprocess.run(command, capture_output=True, text=True, check=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as exc:
            output = getattr(exc, "stderr", None) or getattr(exc, "stdout", None) or exc
            log = self.folder / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise ClusterError(f"{step} failed: {output}\n{tail}") from exc

    def start(self) -> None:
        try:
            # C.UTF-8: byte order, and case folding of all of Unicode for ILIKE
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust",
                      "-E", "UTF8", "--locale=C.UTF-8")
            self.resume()
        except ClusterError:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise

    def start_as_replica(self, primary: "Cluster") -> None:
        """A streaming replica of `primary` (hot standby: it answers reads)."""
        try:
            self._run("pg_basebackup", "-D", str(self.data), "-R", "-X", "stream",
                      "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres")
            self.resume()
        except ClusterError:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise

    def pause(self) -> None:
        """Stop the server, keeping its data (resume() starts it again on the same port)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"),
                  "-w", "-t", "60", "-o",
                  f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
                  "-c fsync=off -c full_page_writes=off -c synchronous_commit=off", "start")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
