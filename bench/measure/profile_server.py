"""Runs in the profiler's container, in the PID namespace of an app's container: py-spy on the app's server and
every process it started, for the seconds given, then the samples on stdout as collapsed stacks (one line per
stack, frames from the outermost, then how many samples had it).

Usage: profile_server.py SECONDS RATE"""

import subprocess
import sys
from pathlib import Path


def parent_of(pid: int) -> int:
    # /proc/<pid>/stat: "pid (name) state ppid ...", and the name may hold spaces and parentheses.
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def server_pid() -> int:
    """The server's main process: PID 1, or the first child of the init process Compose's `init: true` adds."""
    if b"init" not in Path("/proc/1/cmdline").read_bytes().split(b"\0")[0]:
        return 1
    children = sorted(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and parent_of(int(p.name)) == 1)
    if not children:
        sys.exit("no process under the container's init")
    return children[0]


def main() -> None:
    seconds, rate = sys.argv[1], sys.argv[2]
    output = "/tmp/profile.txt"
    # --gil: only the samples of a thread holding the GIL, Python at work (a thread waiting on the database
    # releases it); --nonblocking: read without stopping the process.
    command = ["py-spy", "record", "--pid", str(server_pid()), "--subprocesses", "--duration", seconds,
               "--rate", rate, "--format", "raw", "--nonblocking", "--gil", "--full-filenames",
               "--output", output]  # fmt: skip
    finished = subprocess.run(command, capture_output=True, text=True)
    if finished.returncode != 0 or not Path(output).exists():
        sys.exit(f"py-spy failed: {(finished.stderr or finished.stdout).strip()[-500:]}")
    sys.stdout.write(Path(output).read_text())


if __name__ == "__main__":
    main()
