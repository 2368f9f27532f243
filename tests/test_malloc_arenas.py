"""A web worker's threads share the capped number of malloc arenas (config/memory.py, applied by gunicorn.conf.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Eight threads each hold large (malloc'd, not pymalloc'd) blocks at once, then the process counts the arenas
# glibc's malloc_info reports. Started with `cap` 0, the cap is left alone: glibc's default allows more.
SCRIPT = """
import ctypes, os, sys, tempfile, threading
from config.memory import limit_malloc_arenas
print(limit_malloc_arenas(int(sys.argv[1])))
barrier = threading.Barrier(9)  # the eight threads and this one
def hold():
    blocks = [bytearray(4096) for _ in range(64)]
    barrier.wait()
    barrier.wait()
threads = [threading.Thread(target=hold) for _ in range(8)]
for t in threads: t.start()
libc = ctypes.CDLL(None)
libc.fdopen.restype = ctypes.c_void_p
with tempfile.TemporaryFile() as out:
    stream = libc.fdopen(os.dup(out.fileno()), b"w")
    barrier.wait()  # every thread holds its blocks
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    barrier.wait()  # the threads may let go
    out.seek(0)
    print(out.read().count(b"<heap nr="))
for t in threads: t.join()
"""


def arenas(cap: int) -> tuple[str, int]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(cap)], capture_output=True, text=True, timeout=60, check=True,
                          env={"PATH": "/usr/bin:/bin"}, cwd=Path(__file__).resolve().parent.parent)
    capped, count = done.stdout.split()
    return capped, int(count)


def test_threads_share_the_capped_arenas():
    assert arenas(2) == ("True", 2)


def test_without_a_cap_threads_take_more_arenas():
    capped, count = arenas(0)  # the control: the count above would show a cap that did nothing
    assert capped == "False" and count > 2
