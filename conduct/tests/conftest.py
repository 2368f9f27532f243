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
