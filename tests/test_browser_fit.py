"""Every page of the URLconf fits a 1280×720 and a 1440×900 screen (issue #19).

Every GET route (as tests/test_permission_matrix.py enumerates them, kwargs filled from
tests/world.py) is opened by the project owner in a world with what makes screens wide: many
models with long labels, some never interviewed, a code tree three levels deep with long
names and definitions, a live session with five models side by side. A page fails when the
document scrolls sideways (scrollWidth > clientWidth) or when a control (link, button,
field, summary) sticks out of the screen without sitting in a box that scrolls sideways.
A view added later joins automatically.

One browser context per screen size, logged in once: the sweep stays around a minute.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.test_permission_matrix import ROUTES, Route
from tests.world import World

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SCREENS = [(1280, 720), (1440, 900)]

# Routes whose GET is not a page to look at.
NOT_PAGES = {
    "logout": "Logs the owner out of the sweep.",
    "login": "Logged-in users do not see it; tests/test_browser_login.py looks at it.",
}

LONG_MODELS = [
    "GPT-4o (ChatGPT web, 2024-08-06 snapshot)", "Claude 3.5 Sonnet (claude.ai)", "Llama-3.1-405B-Instruct-Turbo",
    "Gemini 1.5 Pro (AI Studio, safety off)", "DeepSeek-V3 chat", "Mistral Large 2 (la Plateforme)",
]
NEVER_INTERVIEWED = ["Qwen2.5-72B-Instruct (not yet interviewed)", "Command R+ (not yet interviewed)"]
CODE_TREE = [  # (name, parent index)
    ("Belonging framed as a matter of personal choice rather than of papers and welcome", None),
    ("Structural barriers named: borders, money, racism and the housing market", 0),
    ("Self-disclosure as an AI that has no home and no experience of migration", 1),
    ("Advice given as a numbered list of steps", None),
]
UNBROKEN = "self-disclosure_as_an_AI_without_any_home_or_experience_of_migration_v2"
LONG_URL = "https://inference.example.org/v1/accounts/research-group/deployments/chat-completions-eu-west"
DEFINITION = ("The model frames belonging as something a person decides, feels or works towards, leaving out "
              "what others grant or refuse: papers, money, language, the welcome of neighbours. ") * 2

# The page's sideways overflow and every control outside the screen that no sideways-scrolling box holds.
FIT_JS = """() => {
  const doc = document.documentElement, width = doc.clientWidth;
  const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (typeof el.className === "string" && el.className.trim() ? "." + el.className.trim().split(/\\s+/).join(".") : "");
  const scrollsSideways = el => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if ((o === "auto" || o === "scroll") && p.scrollWidth > p.clientWidth) return true;
    }
    return false;
  };
  let widest = null;
  if (doc.scrollWidth > width) {
    // What sticks out furthest, preferring what no scroll box holds; the path says where it sits.
    for (const el of document.body.querySelectorAll("*")) {
      const r = el.getBoundingClientRect(), held = scrollsSideways(el);
      if (r.width && r.right > width + 0.5 && (!widest || (widest.held && !held) || (widest.held === held && r.right > widest.right))) {
        let path = [];
        for (let p = el; p && p !== document.body && path.length < 4; p = p.parentElement) path.unshift(name(p));
        widest = {right: Math.round(r.right), held: held, what: path.join(" > ")};
      }
    }
  }
  const clipped = [];
  for (const el of document.querySelectorAll("a[href], button, input:not([type=hidden]), select, textarea, summary")) {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || getComputedStyle(el).visibility === "hidden") continue;
    if (r.right <= 0) continue;  // parked left of the screen on purpose (skip links until focused)
    if (r.left >= -0.5 && r.right <= width + 0.5) continue;
    if (!scrollsSideways(el)) clipped.push(name(el) + " " + JSON.stringify((el.innerText || el.value || el.name || "").trim().slice(0, 40)) +
                                          " at " + Math.round(r.left) + "–" + Math.round(r.right));
  }
  return {scrollWidth: doc.scrollWidth, clientWidth: width, widest: widest, clipped: clipped.slice(0, 5)};
}"""


def _wide_world(world: World) -> None:
    """What makes screens wide, added to the world: many long-named models, a deep code tree, a five-model session."""
    from django.apps import apps

    from coding.models import Code, Coding
    from conduct.models import Seat
    from interviews.models import Interview, Participant, Segment, Turn

    project, owner = world.project, world.users["owner"]
    session = world.get(apps.get_model("conduct.ConductSession"))
    codes: list[Code] = []
    for i, (name, parent) in enumerate(CODE_TREE):
        codes.append(Code.objects.create(project=project, name=name, definition=DEFINITION, position=10 + i,
                                         parent=codes[parent] if parent is not None else None))
    answer = "Home is where people know you. " * 30
    for position, label in enumerate(LONG_MODELS, start=1):
        # Model ids and file-like names come without spaces: they cannot wrap at a word.
        participant = Participant.objects.create(project=project, label=label, is_live=True, base_url=LONG_URL,
                                                 model_id=f"accounts/fireworks/models/{label.lower().replace(' ', '-')}-instruct-2024-07-23")
        interview = Interview.objects.create(project=project, participant=participant, title=f"Home and belonging: {label}",
                                             origin=Interview.Origin.LIVE, created_by=owner)
        Turn.objects.create(interview=interview, position=0, speaker="interviewer", text="What does home mean to you?")
        turn = Turn.objects.create(interview=interview, position=1, speaker="participant", text=answer)
        segment = Segment.objects.create(interview=interview, turn=turn, position=0, start=0, end=31, text=answer[:31],
                                         speaker="participant")
        Coding.objects.create(segment=segment, code=codes[position % len(codes)], coder=owner, interview=interview)
        Seat.objects.create(session=session, interview=interview, position=position)
    for label in NEVER_INTERVIEWED:
        Participant.objects.create(project=project, label=label, is_live=True)
    Code.objects.create(project=project, name=UNBROKEN, definition=UNBROKEN, position=20)
    project.name = "Chatbots and identity: how five large language models talk about home, belonging and migration"
    project.save(update_fields=["name"])
    for model in ("themes.Theme", "themes.Memo", "interviews.Interview", "interviews.Guide", "probes.Probe"):
        obj = world.get(apps.get_model(model))
        field = "title" if hasattr(obj, "title") else "name"
        setattr(obj, field, f"{UNBROKEN} {getattr(obj, field)}")
        obj.save(update_fields=[field])


def _queries(world: World) -> dict[str, list[str]]:
    """Query strings a page needs to show anything (a comparison of two snapshots), or that make it wider."""
    from django.apps import apps

    snapshot = world.get(apps.get_model("themes.Snapshot")).uuid
    return {
        "themes:snapshot_compare": [f"?a={snapshot}&b={snapshot}"],
        "coding:codebook": ["", "?breakdown=show"],
        "reports:frequency": ["", "?breakdown=show", "?level=theme&breakdown=show",
                              "?sections=provider&infinity=paper&breakdown=show"],
    }


def _pages(world: World, owner) -> list[tuple[str, str]]:
    """(route name, url) of every GET route the owner is served an HTML page at."""
    client = Client()
    client.force_login(owner)
    pages = []
    queries = _queries(world)
    for route in ROUTES:
        if route.is_api or route.name in NOT_PAGES:
            continue
        for query in queries.get(route.name, [""]):
            url = _url(route, world) + query
            if _is_page(client.get(url)):
                pages.append((route.name, url))
    return pages


def _is_page(response) -> bool:
    return response.status_code == 200 and not response.streaming and response["Content-Type"].startswith("text/html")


def _url(route: Route, world: World) -> str:
    return reverse(route.name, kwargs={k: world.kwarg(k, url_name=route.name) for k in route.kwargs})


@pytest.fixture
def wide_world(project, owner, analyst, viewer, outsider) -> World:
    world = World(project=project, owner=owner, analyst=analyst, viewer=viewer, outsider=outsider).populate()
    _wide_world(world)
    return world


def test_every_page_fits_1280_and_1440_screens(browser, live_server, wide_world, owner):
    from conftest import BROWSER_TIMEOUT_MS

    pages = _pages(wide_world, owner)
    # Guards the sweep itself: if it found no pages, nothing would be checked.
    names = {name for name, _ in pages}
    assert {"coding:codebook", "reports:frequency", "themes:board", "themes:snapshot_compare", "conduct:session",
            "project_home"} <= names, names
    client = Client()
    client.force_login(owner)
    cookie = client.cookies["sessionid"]
    problems: list[str] = []
    for width, height in SCREENS:
        context = browser.new_context(viewport={"width": width, "height": height}, base_url=live_server.url)
        context.set_default_timeout(BROWSER_TIMEOUT_MS)
        context.add_cookies([{"name": "sessionid", "value": cookie.value, "url": live_server.url}])
        page = context.new_page()
        try:
            for name, url in pages:
                response = page.goto(url)
                if response is None or response.status != 200:
                    problems.append(f"{name} {url} at {width}×{height}: status {response and response.status}")
                    continue
                fit = page.evaluate(FIT_JS)
                if fit["scrollWidth"] > fit["clientWidth"]:
                    problems.append(f"{name} at {width}×{height}: the page is {fit['scrollWidth']} px wide in a "
                                    f"{fit['clientWidth']} px window; widest: {fit['widest']}")
                for control in fit["clipped"]:
                    problems.append(f"{name} at {width}×{height}: {control} is outside the screen")
        finally:
            context.close()
    assert not problems, f"{len(problems)} problems on {len(pages)} pages:\n" + "\n".join(problems)
