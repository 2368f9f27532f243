from __future__ import annotations

from collections.abc import Iterator

import pytest

from conduct.testing.fake_openai import FakeOpenAIServer


@pytest.fixture(scope="session")
def fake_openai_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def fake_openai(fake_openai_server: FakeOpenAIServer) -> FakeOpenAIServer:
    """The running local chat-completions server, with no scripts or recorded requests."""
    fake_openai_server.reset()
    fake_openai_server.api_key = None
    fake_openai_server.strict_models = False
    return fake_openai_server


@pytest.fixture
def guide(project, owner):
    from conduct.services import guide_create

    return guide_create(
        project=project,
        user=owner,
        name="Values",
        opening_prompt="What does fairness mean to you?",
        system_prompt="You are taking part in a research interview.",
        planned_questions=[
            {"text": "Where does that view come from?", "probes": ["Can you give an example?"]},
            {"text": "How sure are you?", "probes": []},
        ],
    )


@pytest.fixture
def live(project, fake_openai):
    """Make live participants answering from the fake server: live("GPT", "gpt-x", **endpoint)."""
    from conduct.services import live_participant_save

    def make(label: str, model: str, **kwargs):
        fields = {
            "provider": "Fake",
            "model_id": model,
            "base_url": fake_openai.base_url,
            "temperature": None,
            "top_p": None,
            "seed": None,
            "max_tokens": None,
            "timeout_seconds": 5.0,
            "api_key": None,
        } | kwargs
        return live_participant_save(project=project, participant=None, label=label, **fields)

    return make


@pytest.fixture
def inline_answers(settings):
    """Answers run inside the request (not in a thread), so tests see them in their transaction."""
    settings.CONDUCT_EAGER_IN_THREAD = False
    settings.OPENAI_API_KEY = "sk-deployment-test"
    settings.CONDUCT_SAVE_INTERVAL = 0.05
    settings.CONDUCT_BACKOFF_BASE = 0.01
    settings.CONDUCT_HEARTBEAT_SECONDS = 60  # no heartbeat thread write inside the test transaction
