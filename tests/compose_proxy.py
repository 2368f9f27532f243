"""docker-compose.yml's proxy without Docker: its nginx configuration (deploy/nginx.conf) served by nginx, in front
of web replicas found the way compose's network finds them, through DNS.

Docker answers the service name `web` with one address per replica (its embedded DNS at 127.0.0.11); `ReplicaDNS`
does the same on a loopback port. Replicas listen on the same port at their own loopback addresses (127.0.0.2,
127.0.0.3, …), as containers do on their own network addresses.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import struct
import subprocess
import threading
from pathlib import Path

from tests.faults import free_port, stop_group, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
_A, _IN = 1, 1


def port_free_on(*hosts: str) -> int:
    """A port nothing listens on at any of `hosts` (loopback addresses)."""
    for _ in range(50):
        port = free_port()
        try:
            for host in hosts:
                with socket.socket() as s:
                    s.bind((host, port))
        except OSError:
            continue
        return port
    raise RuntimeError(f"no port is free on all of {hosts}")


class ReplicaDNS:
    """A DNS server on 127.0.0.1 that answers `name` with an A record per address, and any other name with
    NXDOMAIN, as Docker's embedded DNS answers a scaled service's name."""

    def __init__(self, name: str, addresses: list[str]) -> None:
        self.name, self.addresses = name.lower().rstrip("."), addresses
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.asked: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                query, client = self.sock.recvfrom(512)
            except OSError:  # closed
                return
            self.sock.sendto(self.answer(query), client)

    def answer(self, query: bytes) -> bytes:
        ident, flags = struct.unpack(">HH", query[:4])
        labels, i = [], 12
        while query[i]:
            labels.append(query[i + 1:i + 1 + query[i]].decode("ascii", "replace"))
            i += 1 + query[i]
        qtype, _qclass = struct.unpack(">HH", query[i + 1:i + 5])
        question = query[12:i + 5]
        name = ".".join(labels).lower()
        self.asked.append(name)
        known = name == self.name
        records = self.addresses if known and qtype == _A else []
        header = struct.pack(">HHHHHH", ident, 0x8180 | (flags & 0x0100) | (0 if known else 3), 1, len(records), 0, 0)
        # Each answer names the question by a pointer to offset 12; TTL 10 s like Docker's.
        answers = b"".join(struct.pack(">HHHIH", 0xC00C, _A, _IN, 10, 4) + socket.inet_aton(a) for a in records)
        return header + question + answers

    def close(self) -> None:
        self.sock.close()


class ComposeProxy:
    """nginx running deploy/nginx.conf, with only what ties it to Docker changed: the resolver's address (Docker's
    127.0.0.11 → `dns`), the published port (80 → a free loopback port) and the replicas' port."""

    def __init__(self, folder: Path, *, dns: ReplicaDNS, web_port: int) -> None:
        self.port = free_port()
        conf = (ROOT / "deploy" / "nginx.conf").read_text()
        for old, new in (("resolver 127.0.0.11 ", f"resolver 127.0.0.1:{dns.port} "),
                         ("listen 80;", f"listen 127.0.0.1:{self.port};"),
                         ("http://web:8000;", f"http://web:{web_port};")):
            assert conf.count(old) == 1, f"deploy/nginx.conf no longer has {old!r} once: update tests/compose_proxy.py"
            conf = conf.replace(old, new)
        (folder / "default.conf").write_text(conf)
        temp = " ".join(f"{kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        # `user`: nginx started by root would run its workers as nobody, who cannot write this folder's temp files.
        (folder / "nginx.conf").write_text(
            f"daemon off; worker_processes 1; pid {folder / 'nginx.pid'}; error_log {folder / 'error.log'} warn;\n"
            f"user {pwd.getpwuid(os.getuid()).pw_name};\n"
            f"events {{}}\nhttp {{ access_log off; {temp} include {folder / 'default.conf'}; }}\n")
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        assert Path(binary).exists(), "nginx is missing: scripts/ensure-nginx (run by make test) installs it"
        self.log = folder / "error.log"
        self.proc = subprocess.Popen([binary, "-p", str(folder), "-e", str(self.log), "-c", str(folder / "nginx.conf")],
                                     start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_for_port(self.port, timeout=30)
        except RuntimeError:
            self.stop()
            raise RuntimeError("nginx did not start: " + (self.proc.stderr.read() or b"").decode()[-2000:]) from None
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_group(self.proc)
