from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Every URLconf and view module is imported now, while the process starts, not by the first request it serves:
# a web worker that gunicorn (re)starts otherwise answers that request a quarter of a second late.
get_resolver().url_patterns  # noqa: B018 - loading it is the point
