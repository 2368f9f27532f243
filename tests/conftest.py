from __future__ import annotations

# The local chat-completions server, live participants on it and real worker processes, as conduct's tests use them.
from conduct.tests.conftest import fake_openai, fake_openai_server, live, start_worker  # noqa: F401
