"""Helpers the benchmark scripts share: logging, running commands, and labs
that are always taken down."""

import json
import subprocess
import sys


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


class Labs:
    """Labs made by this run; all are taken down by close()."""

    def __init__(self, iolab):
        self.iolab = iolab
        self.names = []

    def up(self, name, flags):
        self.names.append(name)  # before: a half-made lab is still removed
        out = run([self.iolab, "lab", "up", "--name", name, "--json", *flags],
                  stdout=subprocess.PIPE).stdout
        return json.loads(out)

    def close(self):
        for name in reversed(self.names):
            r = subprocess.run([self.iolab, "lab", "down", name], text=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if r.returncode != 0:
                log(f"warning: `iolab lab down {name}` failed: {r.stderr.strip()}")
        self.names.clear()
