"""One rank's process: started in a session of its own (so its whole group
can be signalled) that dies with horovodrun, its output forwarded line by
line with a [rank]<stream>: prefix and optionally copied to files."""

import ctypes
import os
import shlex
import signal
import subprocess
import sys
import threading

from horovod.runner.hosts import is_local
from horovod.runner.log import Fatal, vlog
from horovod.runner.remote import rank_shell_command

# One rank's line at a time on horovodrun's stdout and stderr.
_output_lock = threading.Lock()

try:  # looked up before any fork: the child only makes the call
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _prctl = None


def _die_with_parent():
    """In a child before exec: die with horovodrun, even on its SIGKILL."""
    if _prctl is not None:
        _prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG


def describe_status(status):
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = "unknown"
        return f"was killed by signal {-status} ({name})"
    return f"exited with status {status}"


class RankProcess:
    def __init__(self, placement):
        self.placement = placement
        self.rank, self.host = placement.rank, placement.host
        self.proc = None
        self.pumps = []
        self.files = []
        self.on_line = None

    def start(self, command, job_env, launcher, output_folder=None,
              on_line=None):
        """Runs `command` here, or through `launcher` on a remote host;
        `on_line(rank, line)` sees every line it writes."""
        self.on_line = on_line
        local = is_local(self.host)
        secret = None
        if local:
            argv = command
            env = dict(os.environ, **job_env)
            vlog(f"rank {self.rank} on {self.host}: {shlex.join(argv)}")
        else:
            shell_command, secret = rank_shell_command(job_env, command)
            argv = launcher.argv(self.host, shell_command)
            env = dict(os.environ)
            vlog(f"rank {self.rank} on {self.host}: {shlex.join(argv[:3])} "
                 f"... {shlex.join(command)}")
        copies = self._open_output_files(output_folder)
        try:
            self.proc = subprocess.Popen(
                argv, env=env,
                stdin=subprocess.DEVNULL if local else subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, preexec_fn=_die_with_parent)
        except OSError as e:
            raise Fatal(f"cannot start rank {self.rank} on {self.host}: "
                        f"{argv[0]}: {e.strerror}") from None
        if self.proc.stdin:
            try:
                self.proc.stdin.write(f"{secret}\n".encode())
                self.proc.stdin.close()
            except OSError:
                pass  # it died at once; its exit status will say why
        self.pumps = [
            threading.Thread(target=self._pump,
                             args=(self.proc.stdout, "stdout",
                                   sys.stdout.buffer, copies[0]), daemon=True),
            threading.Thread(target=self._pump,
                             args=(self.proc.stderr, "stderr",
                                   sys.stderr.buffer, copies[1]), daemon=True)]
        for t in self.pumps:
            t.start()

    def _open_output_files(self, folder):
        if not folder:
            return None, None
        os.makedirs(folder, exist_ok=True)
        self.files = [open(os.path.join(folder, name), "wb")
                      for name in ("stdout", "stderr")]
        return self.files

    def _pump(self, stream, kind, out, copy):
        prefix = f"[{self.rank}]<{kind}>:".encode()
        for line in iter(stream.readline, b""):
            if not line.endswith(b"\n"):
                line += b"\n"
            with _output_lock:
                try:
                    out.write(prefix + line)
                    out.flush()
                except (OSError, ValueError):
                    pass
            if copy:
                copy.write(line)
                copy.flush()
            if self.on_line:
                self.on_line(self.rank, line)
        stream.close()

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def signal_group(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self):
        """Kills what is left, waits for it and its output to end."""
        if self.running():
            self.signal_group(signal.SIGKILL)
            self.proc.wait()
        for t in self.pumps:
            t.join(timeout=2)
        for f in self.files:
            f.close()
