"""docker-compose.yml started as one compose project of its own, for the compose test (tests/test_compose_stack.py)
and the load bench on the compose topology (bench/load.py --compose).

The stack is the compose file's own: its images (or, where Docker Hub cannot be reached, the stand-ins that
scripts/ensure-docker builds from Debian trixie: deploy/offline/compose.yml changes only the images), its migrate
step, health checks, proxy (deploy/nginx.conf) and network. A file of its own changes three things: free published
ports instead of 8000/5432/6379, plain HTTP (no TLS in front), and every .qdpx export sent to a worker (a small
project's is otherwise written in its request).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path

import psycopg
import requests

from tests.faults import free_port, wait_until
from tests.test_deploy import compose_command

ROOT = Path(__file__).resolve().parent.parent
OFFICIAL_IMAGES = ("python:3.13-slim", "postgres:16", "redis:7", "nginx:1.27-alpine")
APP_IMAGE = "rta-studio:compose-test"


def docker_answers() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0


def image_id(image: str) -> str | None:
    found = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", image], capture_output=True, text=True,
                           timeout=60)
    return found.stdout.strip() if found.returncode == 0 else None


class Stack:
    """One compose project of the repository's docker-compose.yml, under a name of its own."""

    def __init__(self, workdir: Path) -> None:
        self.name = f"rta-compose-{secrets.token_hex(4)}"
        self.proxy_port, self.db_port = free_port(), free_port()
        files = ["docker-compose.yml"]
        if not all(image_id(image) for image in OFFICIAL_IMAGES):
            files.append("deploy/offline/compose.yml")
        local = workdir / "this-machine.yml"
        local.write_text(self._local_changes())
        self.files = [arg for f in [*files, str(local)] for arg in ("-f", f)]
        self.env = {**os.environ, "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "127.0.0.1,localhost"}

    def _local_changes(self) -> str:
        # One image for every app service, under one name across runs: the next build starts from its layers.
        app = {"image": APP_IMAGE, "environment": {"RTA_SSL_REDIRECT": "false", "RTA_SECURE_COOKIES": "false",
                               "RTA_EXPORT_INLINE_MAX_SEGMENTS": "0"}}
        return json.dumps({"services": {
            "db": {"ports": [f"127.0.0.1:{self.db_port}:5432"]},
            "redis": {"ports": []},
            "proxy": {"ports": [f"127.0.0.1:{self.proxy_port}:80"]},
            **{service: app for service in ("migrate", "web", "worker", "worker-live", "beat")},
        }}).replace('"ports": [', '"ports": !override [')

    def compose(self, *args: str, timeout: float = 900) -> str:
        done = subprocess.run([*compose_command(), "-p", self.name, *self.files, *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"compose {' '.join(args)}:\n{done.stderr[-3000:]}"
        return done.stdout

    def build_app_image(self) -> None:
        """The app services' one image, built once from this checkout; the previous build's image is removed."""
        previous = image_id(APP_IMAGE)
        self.compose("build", "migrate", timeout=1800)
        if previous and previous != image_id(APP_IMAGE):
            subprocess.run(["docker", "image", "rm", previous], capture_output=True, timeout=300)

    def container(self, service: str, index: int) -> str:
        return f"{self.name}-{service}-{index}"

    def docker(self, *args: str) -> None:
        subprocess.run(["docker", *args], check=True, capture_output=True, timeout=300)

    def running(self, service: str) -> list[str]:
        return sorted(self.compose("ps", "--status", "running", "--format", "{{.Name}}", service).split())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    def database(self) -> psycopg.Connection:
        return psycopg.connect(host="127.0.0.1", port=self.db_port, user="rta", password="rta", dbname="rta",
                               autocommit=True)

    def cpu_seconds(self, service: str) -> float | None:
        """CPU seconds the service's running containers have used, from their cgroups (v1 or v2); None if unreadable."""
        total = 0.0
        for container in self.compose("ps", "--quiet", "--no-trunc", service).split():
            v1 = Path(f"/sys/fs/cgroup/cpuacct/docker/{container}/cpuacct.usage")
            v2 = Path(f"/sys/fs/cgroup/system.slice/docker-{container}.scope/cpu.stat")
            if v1.exists():
                total += int(v1.read_text()) / 1e9
            elif v2.exists():
                total += int(v2.read_text().split("usage_usec ", 1)[1].split()[0]) / 1e6
            else:
                return None
        return total

    def start(self, *, web: int = 2, worker: int = 2) -> None:
        """Builds the app image, starts every service with `web` and `worker` replicas, and waits for the proxy."""
        self.build_app_image()
        self.compose("up", "--detach", "--scale", f"web={web}", "--scale", f"worker={worker}")
        wait_until(lambda: answers(f"{self.url}/healthz"), "the proxy to answer through a web replica", 300)

    def stop(self) -> str:
        """Removes the stack and its volumes; answers the services' last log lines."""
        logs = self.compose("logs", "--no-color", "--tail", "40")
        self.compose("down", "--volumes", "--remove-orphans", "--timeout", "20")
        return logs


def answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=10).status_code == 200
    except requests.RequestException:
        return False
