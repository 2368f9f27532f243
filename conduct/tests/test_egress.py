"""Where requests to model endpoints may go: the address policy, when saving and on every connection."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from conduct.answering import egress_policy
from conduct.client import Endpoint, FailureKind, stream_answer
from conduct.egress import EgressPolicy, EgressRefused, normalized_url
from conduct.testing.fake_openai import FakeOpenAIServer
from interviews.models import Participant, Turn

STRICT = EgressPolicy()
LOCAL = EgressPolicy(allow_private_networks=True)

# Every spelling reaches the cloud metadata service (169.254.169.254) or another link-local address.
LINK_LOCAL = [
    "http://169.254.169.254/v1",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[2002:a9fe:a9fe::1]/",  # 6to4
    "http://[::a9fe:a9fe]/",  # IPv4-compatible
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64
    "http://2852039166/",  # one decimal number
    "http://0xa9.0xfe.0xa9.0xfe/",  # hexadecimal parts
    "http://[fe80::1]/",
]
# Loopback and private addresses in their plain and disguised forms.
PRIVATE = [
    "http://127.0.0.1:8126/",
    "http://[::ffff:127.0.0.1]:8126/",
    "http://[::1]:8126/",
    "http://localhost:8126/",
    "http://0x7f.1/",
    "http://2130706433/",
    "http://10.1.2.3/v1",
    "http://[::ffff:10.1.2.3]/",
    "http://192.168.0.10/",
    "http://172.16.5.4/",
    "http://100.64.0.1/",  # carrier-grade NAT
]


@pytest.mark.parametrize("url", LINK_LOCAL)
def test_link_local_addresses_are_refused_even_where_private_networks_are_allowed(url):
    for policy in (STRICT, LOCAL):
        with pytest.raises(EgressRefused, match="link-local"):
            policy.check_url(url)


@pytest.mark.parametrize("url", PRIVATE)
def test_private_addresses_are_refused_unless_the_deployment_allows_them(url):
    with pytest.raises(EgressRefused, match="ENDPOINTS_ALLOW_PRIVATE_NETWORKS"):
        STRICT.check_url(url)
    LOCAL.check_url(url)


@pytest.mark.parametrize("url", ["http://0.0.0.0:80/", "http://[::]/", "http://224.0.0.1/", "http://240.0.0.1/"])
def test_addresses_no_endpoint_can_have_are_refused(url):
    with pytest.raises(EgressRefused, match="not an address a model endpoint can have"):
        LOCAL.check_url(url)


@pytest.mark.parametrize("url,problem", [
    ("ftp://example.org/", "http:// or https://"),
    ("http://user:pw@example.org/", "Put credentials in a stored key"),
    ("http:///v1", "no host"),
])
def test_malformed_endpoint_urls_are_refused_with_what_is_wrong(url, problem):
    with pytest.raises(EgressRefused, match=problem):
        STRICT.check_url(url)


def test_public_addresses_and_trusted_hosts_pass():
    STRICT.check_url("http://93.184.215.14/v1")
    STRICT.check_url("http://[2606:4700::1111]/v1")
    EgressPolicy(trusted_endpoints=frozenset({("127.0.0.1", 8000)})).check_url("http://127.0.0.1:8000/v1")


def test_urls_are_compared_in_one_spelling():
    assert normalized_url("HTTPS://API.OpenAI.com:443/v1/") == normalized_url("https://api.openai.com/v1")
    assert normalized_url("http://[::1]:80/v1") == "http://[::1]/v1"
    assert normalized_url("http://a.org:8080/v1") != normalized_url("http://a.org/v1")


def test_the_connection_itself_is_checked_so_nothing_is_sent(fake_openai):
    """A URL that passed when saved (or a name that resolves elsewhere now) is checked again on connecting."""
    fake_openai.script("m", answer="Hello.")
    waits: list[float] = []
    endpoint = Endpoint(model="m", base_url=fake_openai.base_url, api_key="sk-secret", egress=STRICT)

    result = stream_answer(endpoint, [{"role": "user", "content": "Hi"}], sleep=waits.append, max_attempts=3)

    assert result.failure is not None and result.failure.kind == FailureKind.REFUSED
    assert "Nothing was sent" in result.failure.message and "127.0.0.1" in result.failure.message
    assert waits == []  # a refusal is final: no retries
    assert fake_openai.requests == []


@pytest.mark.django_db
def test_a_participant_saved_while_private_networks_were_allowed_sends_nothing_once_they_are_not(
    project, owner, guide, live, fake_openai, inline_answers, settings, django_capture_on_commit_callbacks
):
    from conduct import services

    participant = live("M", "m")
    settings.ENDPOINTS_ALLOW_PRIVATE_NETWORKS = False
    with django_capture_on_commit_callbacks(execute=True):
        session = services.session_start(project=project, user=owner, guide_version=guide.versions.get(),
                                          participants=[participant])
    answer = session.seats.get().interview.turns.get(position=1)
    assert answer.status == Turn.Status.FAILED and answer.metadata["failure"]["kind"] == "refused"
    assert fake_openai.requests == []


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["http://[::ffff:169.254.169.254]/", "http://[::ffff:127.0.0.1]:8126/"])
def test_the_participant_form_refuses_mapped_ipv6_forms(url, project, analyst, settings, client_for):
    settings.ENDPOINTS_ALLOW_PRIVATE_NETWORKS = False
    response = client_for(analyst).post(
        reverse("conduct:participant_create", args=[project.uuid]),
        {"label": "X", "model_id": "m", "base_url": url, "timeout_seconds": "60", "key": "none"},
    )
    assert response.status_code == 400
    assert "link-local" in response.content.decode() or "private networks" in response.content.decode()
    assert not Participant.objects.filter(label="X").exists()


def test_a_web_process_loads_no_model_client():
    """openai and httpx (~40 MB per process) load only where a model is called: a web worker that has set up Django
    and its URLconf, and so imported every view, has neither."""
    import subprocess
    import sys

    script = ("import sys, django; django.setup(); from django.urls import get_resolver; get_resolver().url_patterns; "
              "print(sorted(m for m in ('openai', 'httpx2', 'httpcore2') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
    calling = subprocess.run([sys.executable, "-c", script.replace("print(", "import conduct.guarded_http; print(")],
                             capture_output=True, text=True, timeout=120, check=True)
    assert calling.stdout.strip().splitlines()[-1] == "['httpcore2', 'httpx2']"  # the check above can see them


def test_the_deployments_endpoint_is_trusted_on_its_own_port_only():
    trusted = EgressPolicy(trusted_endpoints=frozenset({("127.0.0.1", 8000)}))
    trusted.check_url("http://127.0.0.1:8000/v1")
    for other in ("http://127.0.0.1:8001/v1", "http://127.0.0.1/v1", "http://127.0.0.1:5432/", "http://localhost:8000/v1"):
        with pytest.raises(EgressRefused, match="does not allow model endpoints on private networks"):
            trusted.check_url(other)


def test_a_member_cannot_reach_another_service_on_the_deployments_model_host(project, analyst, settings, client_for,
                                                                              fake_openai):
    settings.ENDPOINTS_ALLOW_PRIVATE_NETWORKS = False
    settings.OPENAI_BASE_URL = fake_openai.base_url
    with FakeOpenAIServer() as other_service:
        response = client_for(analyst).post(
            reverse("conduct:participant_create", args=[project.uuid]),
            {"label": "Mine", "model_id": "m", "base_url": other_service.base_url, "timeout_seconds": "5", "key": "none"})
        assert response.status_code == 400
        assert "does not allow model endpoints on private networks" in response.content.decode()
        # Saved before the deployment's URL changed, it is refused on connecting: nothing reaches the other service.
        endpoint = Endpoint(model="m", base_url=other_service.base_url, api_key="no-key", egress=egress_policy())
        result = stream_answer(endpoint, [{"role": "user", "content": "hi"}], max_attempts=1)
        assert result.failure is not None and other_service.chat_requests() == []
    endpoint = Endpoint(model="m", base_url=fake_openai.base_url, api_key="no-key", egress=egress_policy())
    fake_openai.script("m", answer="Hello.")
    assert stream_answer(endpoint, [{"role": "user", "content": "hi"}], max_attempts=1).text == "Hello."


@pytest.mark.parametrize("url", [
    "http://[fd00:ec2::254]/latest/meta-data/",  # AWS metadata over IPv6
    "http://[fd20:ce::254]/computeMetadata/v1/",  # Google Cloud metadata over IPv6
    "http://100.100.100.200/latest/meta-data/",  # Alibaba Cloud metadata
])
def test_cloud_metadata_services_are_refused_even_where_private_networks_are_allowed(url):
    host = urlsplit(url).hostname
    for policy in (LOCAL, STRICT, EgressPolicy(allow_private_networks=True, trusted_endpoints=frozenset({(host, 80)}))):
        with pytest.raises(EgressRefused, match="cloud metadata service's address"):
            policy.check_url(url)


def test_deprecated_site_local_ipv6_is_refused():
    for policy in (LOCAL, STRICT):
        with pytest.raises(EgressRefused, match="not an address a model endpoint can have"):
            policy.check_url("http://[fec0::1]/v1")
