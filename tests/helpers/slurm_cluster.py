"""A single-node SLURM cluster for the test suite: munged, slurmctld and slurmd of Debian's slurm-wlm.

The cluster lives in a temporary directory (configuration, state, spool, logs, pid files, munge key
and socket).  `SlurmCluster` starts the three daemons and stops exactly those it started, by the pid
files they wrote.  The node offers this machine's CPUs and memory (as `slurmd -C` reports them) and one
fake GPU (a GRES backed by `/dev/null`), so rules that request `gpu=1` schedule.

Hand-written because no maintained Python package starts a throw-away SLURM; the settings that make a
one-machine cluster work:

* munged runs as root with a root-owned key created by `mungekey` and a 0755 socket directory;
  slurm.conf points at that socket (`AuthInfo=socket=...`);
* no cgroups: `proctrack/linuxproc`, `task/none`, `select/cons_tres`;
* the GPU GRES needs `File=` (without it the node is drained);
* the executor plugin's job step drops `SLURM_CONF` before its inner `srun`, so the configuration must
  also be reachable at `/etc/slurm/slurm.conf`: a symlink is created there when that path is free and
  removed again on stop;
* without slurmdbd, job status comes from `squeue`, which needs `MinJobAge` >= 120 s (an hour here, so
  that `scontrol show job` still describes every job of a test run after it ended).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PACKAGES = ("slurm-wlm", "munge")
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "mungekey")
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
PARTITION = "debug"
APT = ("apt-get", "-o", "DPkg::Lock::Timeout=600", "-q", "-y")


def _have_binaries() -> bool:
    return all(shutil.which(name) or Path("/usr/sbin", name).exists() for name in DAEMONS)


def unavailable_reason() -> str | None:
    """Why a local SLURM cannot be started here (None when it can, possibly after an apt install)."""
    if _have_binaries():
        return _system_conf_conflict()
    if os.geteuid() != 0:
        return "slurm-wlm/munge are not installed and installing them with apt needs root"
    if shutil.which("apt-get") is None:
        return "slurm-wlm/munge are not installed and apt-get is not available"
    return _system_conf_conflict()


def _system_conf_conflict() -> str | None:
    if os.geteuid() != 0:
        return "starting slurmd and munged as the node's daemons needs root"
    if SYSTEM_CONF.exists() and not SYSTEM_CONF.is_symlink():
        return f"{SYSTEM_CONF} belongs to an existing SLURM installation; the test will not replace it"
    return None


def ensure_installed(log: Path) -> None:
    """Install slurm-wlm and munge with apt when their binaries are missing (`apt-get update` first)."""
    if _have_binaries():
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    with open(log, "a") as fh:
        for args in (("update",), ("install", "--no-install-recommends", *PACKAGES)):
            subprocess.run([*APT, *args], stdout=fh, stderr=subprocess.STDOUT, env=env, check=True, timeout=900)
    if not _have_binaries():
        raise RuntimeError(f"apt installed {PACKAGES} but {DAEMONS} are still missing (see {log})")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def node_hardware() -> dict[str, str]:
    """`slurmd -C`'s description of this machine: NodeName, CPUs, sockets/cores/threads, RealMemory (MB)."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    fields = dict(item.split("=", 1) for item in out.splitlines()[0].split())
    keep = ("NodeName", "CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")
    return {k: fields[k] for k in keep if k in fields}


def _slurm_conf(root: Path, hw: dict[str, str], ctld_port: int, slurmd_port: int) -> str:
    node = " ".join(f"{k}={v}" for k, v in hw.items())
    return f"""\
ClusterName=csfbench-test
SlurmctldHost={hw['NodeName']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
MinJobAge=3600
SchedulerParameters=sched_interval=2
GresTypes=gpu
{node} Gres=gpu:1 State=UNKNOWN
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def _pid_alive(pid: int) -> bool:
    """True while `pid` runs (a zombie left for a container's init to reap counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class SlurmCluster:
    """Context manager: a running single-node cluster; `env` holds the variables its clients need."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root or tempfile.mkdtemp(prefix="csfbench-slurm-"))
        self.conf = self.root / "slurm.conf"
        self.pid_files = {
            "munged": self.root / "munge/munged.pid",
            "slurmctld": self.root / "slurmctld.pid",
            "slurmd": self.root / "slurmd.pid",
        }
        self.started: dict[str, int] = {}  # daemon -> pid, in start order
        self._linked_system_conf = False
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    # -- set-up -----------------------------------------------------------------------------------
    def _write_config(self) -> None:
        for sub in ("state", "spool", "log", "munge"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        (self.root / "munge").chmod(0o755)  # munged insists on a socket directory others cannot write
        hw = node_hardware()
        self.node = hw["NodeName"]
        self.conf.write_text(_slurm_conf(self.root, hw, _free_port(), _free_port()))
        (self.root / "gres.conf").write_text(f"NodeName={self.node} Name=gpu File=/dev/null\n")
        key = self.root / "munge/munge.key"
        subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True, capture_output=True)
        key.chmod(0o600)

    def _link_system_conf(self) -> None:
        if SYSTEM_CONF.is_symlink() or not SYSTEM_CONF.exists():
            SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
            if SYSTEM_CONF.is_symlink():
                SYSTEM_CONF.unlink()  # a dangling link left by an earlier, killed test session
            SYSTEM_CONF.symlink_to(self.conf)
            self._linked_system_conf = True

    def _start(self, name: str, cmd: list[str], timeout: float = 30) -> None:
        subprocess.run(cmd, check=True, capture_output=True, env=self.env, timeout=timeout)
        pid_file = self.pid_files[name]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pid_file.is_file() and pid_file.read_text().strip():
                self.started[name] = int(pid_file.read_text().split()[0])
                return
            time.sleep(0.1)
        raise RuntimeError(f"{name} wrote no pid file {pid_file} within {timeout} s (logs under {self.root})")

    def start(self) -> "SlurmCluster":
        self._write_config()
        self._link_system_conf()
        munge = self.root / "munge"
        self._start("munged", ["munged", "--force", f"--socket={munge}/munge.socket",
                               f"--key-file={munge}/munge.key", f"--pid-file={munge}/munged.pid",
                               f"--log-file={munge}/munged.log", f"--seed-file={munge}/munged.seed"])
        self._start("slurmctld", ["slurmctld", "-f", str(self.conf)])
        self._start("slurmd", ["slurmd", "-f", str(self.conf)])
        self.wait_until_idle()
        return self

    def wait_until_idle(self, timeout: float = 60) -> None:
        """Wait until the node has registered and accepts jobs."""
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            proc = self.run("sinfo", "-h", "-N", "-o", "%T", check=False)
            state = proc.stdout.strip()
            if state in ("idle", "mixed", "allocated"):
                return
            time.sleep(0.5)
        raise RuntimeError(f"node {self.node} is '{state}' after {timeout} s; see {self.root}/log")

    # -- use --------------------------------------------------------------------------------------
    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run a SLURM client command against this cluster."""
        return subprocess.run(cmd, capture_output=True, text=True, env=self.env, check=check, timeout=60)

    def controller_log(self) -> str:
        return (self.root / "log/slurmctld.log").read_text()

    # -- tear-down --------------------------------------------------------------------------------
    def stop(self, timeout: float = 30) -> None:
        """Stop the daemons this object started (newest first), by the pids their pid files gave."""
        for name, pid in reversed(list(self.started.items())):
            if _pid_alive(pid):
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while _pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        if self._linked_system_conf and SYSTEM_CONF.is_symlink() and SYSTEM_CONF.resolve() == self.conf:
            SYSTEM_CONF.unlink()
            self._linked_system_conf = False

    def alive(self) -> dict[str, bool]:
        return {name: _pid_alive(pid) for name, pid in self.started.items()}

    def __enter__(self) -> "SlurmCluster":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
