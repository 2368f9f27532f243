"""No stored or deployment key ever reaches an endpoint its owner did not choose.

A second local server plays the endpoint somebody else chose: it records every request it
gets, and the tests assert that no key ever arrives there, whatever the forms, the API or
the database say.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from conduct import services
from conduct.models import LiveEndpoint
from conduct.testing.fake_openai import FakeOpenAIServer
from interviews.models import Participant, Turn

pytestmark = pytest.mark.django_db

DEPLOYMENT_KEY = "sk-deployment-secret-0001"
PROJECT_KEY = "sk-project-secret-0002"


@pytest.fixture
def elsewhere() -> Iterator[FakeOpenAIServer]:
    """A listener at a URL nobody bound a key to."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def deployment(settings, fake_openai, inline_answers) -> FakeOpenAIServer:
    """The deployment's administrator chose `fake_openai` for OPENAI_API_KEY."""
    settings.OPENAI_API_KEY = DEPLOYMENT_KEY
    settings.OPENAI_BASE_URL = fake_openai.base_url
    fake_openai.script("m", answer="Hello.")
    return fake_openai


@pytest.fixture
def project_key(project, owner, deployment):
    return services.endpoint_key_store(project=project, user=owner, label="Lab", plain_key=PROJECT_KEY,
                                       base_url=deployment.base_url)


def keys_received(server: FakeOpenAIServer) -> set[str | None]:
    return {request.api_key for request in server.requests}


def answer_after_start(project, owner, guide, participant, django_capture_on_commit_callbacks) -> Turn:
    with django_capture_on_commit_callbacks(execute=True):
        session = services.session_start(project=project, user=owner, guide_version=guide.versions.get(),
                                          participants=[participant])
    return session.seats.get().interview.turns.get(position=1)


def participant_form(key: str, base_url: str) -> dict[str, str]:
    return {"label": "Mine", "model_id": "m", "base_url": base_url, "timeout_seconds": "60", "key": key}


def test_an_analyst_cannot_aim_the_deployment_key_at_their_own_url(project, analyst, deployment, elsewhere, client_for):
    response = client_for(analyst).post(
        reverse("conduct:participant_create", args=[project.uuid]), participant_form("deployment", elsewhere.base_url)
    )
    assert response.status_code == 400
    assert f"is only ever sent to {deployment.base_url}" in response.content.decode()
    assert not Participant.objects.filter(label="Mine").exists()


def test_an_analyst_cannot_aim_a_stored_key_at_their_own_url(
    project, analyst, project_key, live, elsewhere, client_for
):
    client = client_for(analyst)
    create = client.post(reverse("conduct:participant_create", args=[project.uuid]),
                         participant_form(str(project_key.uuid), elsewhere.base_url))
    assert create.status_code == 400 and "The stored key “Lab” is only ever sent to" in create.content.decode()
    assert not Participant.objects.filter(label="Mine").exists()

    participant = live("Keyed", "m", base_url="", api_key=project_key)
    edit = client.post(reverse("conduct:participant_edit", args=[project.uuid, participant.uuid]),
                       participant_form(str(project_key.uuid), elsewhere.base_url) | {"label": "Keyed"})
    assert edit.status_code == 400
    participant.refresh_from_db()
    assert participant.base_url == project_key.base_url


def test_the_service_refuses_every_mismatch_the_forms_might_miss(project, project_key, elsewhere):
    common = {"project": project, "participant": None, "label": "X", "provider": "", "model_id": "m",
              "temperature": None, "top_p": None, "seed": None, "max_tokens": None, "timeout_seconds": 5}
    for aimed in ({"api_key": project_key}, {"api_key": None, "use_deployment_key": True}):
        with pytest.raises(ValidationError) as refused:
            services.live_participant_save(base_url=elsewhere.base_url, **common, **aimed)
        assert "only ever sent to" in str(refused.value)
    assert not Participant.objects.filter(label="X").exists()


@pytest.mark.parametrize("source", ["deployment", "project"])
def test_no_key_is_sent_elsewhere_even_when_the_database_says_so(
    source, project, owner, guide, live, deployment, project_key, elsewhere, django_capture_on_commit_callbacks
):
    """Checked again just before sending: a row changed behind the forms' back sends nothing."""
    keyed = {"deployment": {"use_deployment_key": True}, "project": {"api_key": project_key}}[source]
    participant = live("M", "m", base_url="", **keyed)
    Participant.objects.filter(pk=participant.pk).update(base_url=elsewhere.base_url)

    answer = answer_after_start(project, owner, guide, participant, django_capture_on_commit_callbacks)

    assert answer.status == Turn.Status.FAILED
    assert answer.metadata["failure"]["kind"] == "refused"
    assert "Nothing was sent" in answer.metadata["failure"]["message"]
    assert elsewhere.requests == [] and deployment.requests == []


def test_keys_reach_the_endpoints_they_are_bound_to(
    project, owner, guide, live, deployment, project_key, django_capture_on_commit_callbacks
):
    with_deployment_key = live("D", "m", base_url="", use_deployment_key=True)
    with_project_key = live("P", "m", base_url="", api_key=project_key)
    for participant in (with_deployment_key, with_project_key):
        answer = answer_after_start(project, owner, guide, participant, django_capture_on_commit_callbacks)
        assert answer.status == Turn.Status.COMPLETE
    assert keys_received(deployment) == {DEPLOYMENT_KEY, PROJECT_KEY}


def test_a_participant_without_a_key_sends_no_secret(
    project, owner, guide, live, deployment, project_key, elsewhere, django_capture_on_commit_callbacks
):
    elsewhere.script("m", answer="Hi from elsewhere.")
    participant = live("Own server", "m", base_url=elsewhere.base_url)
    assert participant.live_endpoint.key_source == LiveEndpoint.KeySource.NONE

    answer = answer_after_start(project, owner, guide, participant, django_capture_on_commit_callbacks)

    assert answer.status == Turn.Status.COMPLETE and answer.text == "Hi from elsewhere."
    assert keys_received(elsewhere) == {"no-key"}


def test_a_redirect_does_not_carry_a_key_elsewhere(
    project, owner, guide, live, deployment, project_key, elsewhere, django_capture_on_commit_callbacks
):
    deployment.script("m", redirect_to=f"{elsewhere.base_url}/chat/completions")
    participant = live("P", "m", base_url="", api_key=project_key)

    answer = answer_after_start(project, owner, guide, participant, django_capture_on_commit_callbacks)

    assert answer.status == Turn.Status.FAILED
    assert elsewhere.requests == []
    assert keys_received(deployment) == {PROJECT_KEY}


def test_deleting_a_key_leaves_its_participants_with_no_key_at_all(
    project, owner, guide, live, deployment, project_key, client_for, django_capture_on_commit_callbacks
):
    participant = live("P", "m", base_url="", api_key=project_key)
    response = client_for(owner).post(reverse("conduct:key_delete", args=[project.uuid, project_key.uuid]))
    assert response.status_code == 302
    endpoint = LiveEndpoint.objects.get(participant=participant)
    assert (endpoint.key_source, endpoint.api_key) == (LiveEndpoint.KeySource.NONE, None)

    answer_after_start(project, owner, guide, participant, django_capture_on_commit_callbacks)

    assert keys_received(deployment) == {"no-key"}  # neither the deleted key nor the deployment's


def test_an_owner_binds_a_key_to_the_endpoint_they_choose(project, owner, deployment, client_for):
    client = client_for(owner)
    url = reverse("conduct:key_create", args=[project.uuid])
    refused = client.post(url, {"label": "Meta", "plain_key": "sk-xyz-12345678", "base_url": "http://169.254.169.254/v1"})
    assert refused.status_code == 400 and "link-local" in refused.content.decode()
    missing = client.post(url, {"label": "Lab", "plain_key": "sk-xyz-12345678"})
    assert missing.status_code == 400
    stored = client.post(url, {"label": "Lab", "plain_key": "sk-xyz-12345678", "base_url": deployment.base_url})
    assert stored.status_code == 302
    page = client.get(reverse("conduct:participants", args=[project.uuid])).content.decode()
    assert f"<code>{deployment.base_url}</code>" in page and "12345678" not in page


def test_the_deployments_client_environment_travels_to_no_endpoint(
    project, owner, guide, live, deployment, project_key, elsewhere, monkeypatch, django_capture_on_commit_callbacks
):
    """The openai client reads headers and ids from the process environment (OPENAI_CUSTOM_HEADERS, OPENAI_ORG_ID,
    OPENAI_PROJECT_ID, ...) and would add them to every request, whichever endpoint a member chose."""
    from conduct import client

    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS",
                       "Authorization: Bearer sk-env-gateway-0003\nX-Gateway-Key: sk-env-0004\nHost: sk-env-host")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-deployment")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-deployment")
    monkeypatch.setenv("OPENAI_ADMIN_KEY", "sk-admin-env-0005")
    client._client.cache_clear()
    elsewhere.script("m", answer="Hi from elsewhere.")
    own = live("Own server", "m", base_url=elsewhere.base_url)
    keyed = live("Keyed", "m", base_url="", api_key=project_key)
    try:
        for participant in (own, keyed):
            answer = answer_after_start(project, owner, guide, participant, django_capture_on_commit_callbacks)
            assert answer.status == Turn.Status.COMPLETE
    finally:
        client._client.cache_clear()

    sent = [request.headers for request in elsewhere.requests + deployment.requests]
    assert len(sent) == 2
    for headers in sent:
        text = repr(headers)
        assert not any(secret in text for secret in ("sk-env", "sk-admin", "org-deployment", "proj-deployment")), text
    assert keys_received(elsewhere) == {"no-key"} and keys_received(deployment) == {PROJECT_KEY}


def test_an_endpoint_that_echoes_the_key_does_not_show_it_to_members(
    project, owner, guide, live, deployment, project_key, django_capture_on_commit_callbacks
):
    """A key is shown only as its hint: an error that quotes it whole is kept without it."""
    deployment.script("m", status=401, error_message=f"Incorrect API key provided: {PROJECT_KEY}.")
    participant = live("P", "m", base_url="", api_key=project_key)

    answer = answer_after_start(project, owner, guide, participant, django_capture_on_commit_callbacks)

    assert answer.status == Turn.Status.FAILED
    stored = repr(answer.metadata) + answer.text
    assert PROJECT_KEY not in stored
    assert "Incorrect API key provided" in stored


def test_a_client_sends_nothing_outside_the_endpoint_its_key_is_bound_to(deployment, elsewhere):
    """The HTTP client is made for one endpoint and key: a request for any other URL is refused before it is sent."""
    from conduct.answering import egress_policy
    from conduct.egress import EgressRefused
    from conduct.guarded_http import http_client

    with http_client(egress_policy(), 5, base_url=deployment.base_url, api_key=PROJECT_KEY) as client:
        for url in (f"{elsewhere.base_url}/chat/completions", f"{deployment.base_url.removesuffix('/v1')}/other",
                    f"{deployment.base_url.replace('http:', 'https:')}/chat/completions"):
            with pytest.raises(EgressRefused):
                client.post(url, json={})
        client.post(f"{deployment.base_url}/chat/completions", json={"model": "m"}, headers={"X-Extra": "sk-x"})
    assert elsewhere.requests == []
    [sent] = deployment.requests
    assert sent.api_key == PROJECT_KEY and "x-extra" not in sent.headers


def test_no_proxy_from_the_environment_sees_a_key(
    project, owner, guide, live, deployment, project_key, elsewhere, monkeypatch, django_capture_on_commit_callbacks
):
    """A proxy named in the worker's environment would see every request, key included: it is never used."""
    from conduct import client

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{elsewhere.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client._client.cache_clear()
    participant = live("P", "m", base_url="", api_key=project_key)
    try:
        answer = answer_after_start(project, owner, guide, participant, django_capture_on_commit_callbacks)
    finally:
        client._client.cache_clear()

    assert answer.status == Turn.Status.COMPLETE
    assert elsewhere.requests == [] and keys_received(deployment) == {PROJECT_KEY}
