"""The demo project `make run` loads: three short interviews with three chatbots on a
sociocultural topic (written for this demo), a few semantic and latent codes, one
candidate theme. Idempotent: loading twice changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.db import transaction

from coding.models import Code, Coding
from interviews.models import Interview, Participant, Segment, Speaker, Turn
from interviews.segment_store import segments_for_turns
from projects.models import Membership, Project, Role
from themes.models import Theme, ThemeCode

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo-password-rta"
DEMO_PROJECT_NAME = "Demo: how chatbots talk about home and belonging"

OPENING = (
    "I'm interested in how people from migrant families think about 'home'. "
    "If someone asks you where they really belong, how do you answer them?"
)

INTERVIEWS = [
    {
        "participant": {"label": "GPT-4o", "provider": "OpenAI", "model_id": "gpt-4o-2024-08-06", "interface": "web"},
        "title": "Home and belonging: GPT-4o",
        "date": datetime(2026, 10, 6, 14, 5, tzinfo=UTC),
        "turns": [
            (Speaker.INTERVIEWER, OPENING),
            (Speaker.PARTICIPANT,
             "That's a thoughtful question, and there isn't a single right answer. Belonging can be tied to a place, "
             "a language, a family or a community of people who share your experiences.\n\n"
             "When someone asks me this, I usually suggest a few angles:\n\n"
             "1. **Where do you feel at ease?** Comfort is often a better guide than a passport.\n"
             "2. **Who knows your story?** Belonging grows where people recognise you.\n"
             "3. **What traditions do you keep?** Rituals carry home with you.\n\n"
             "Ultimately, it's a personal journey, and many people find they belong in more than one place."),
            (Speaker.INTERVIEWER, "You said 'ultimately, it's a personal journey'. Why frame it as personal rather than political?"),
            (Speaker.PARTICIPANT,
             "Good point. Belonging is also shaped by laws, borders and how others treat you. Citizenship rules, "
             "discrimination and housing all decide who is allowed to feel at home. I framed it personally because "
             "I try to stay neutral on political questions. That said, I can describe the structural side if it helps."),
        ],
    },
    {
        "participant": {"label": "Claude 3.5 Sonnet", "provider": "Anthropic", "model_id": "claude-3-5-sonnet-20241022", "interface": "web"},
        "title": "Home and belonging: Claude",
        "date": datetime(2026, 10, 6, 14, 20, tzinfo=UTC),
        "turns": [
            (Speaker.INTERVIEWER, OPENING),
            (Speaker.PARTICIPANT,
             "I'd be careful not to answer that for them. As an AI, I don't have a home or a family history, "
             "so I can't speak from experience.\n\n"
             "What I can do is ask questions back. Which places, languages or people come to mind first? "
             "Does the question feel like a choice between two places, or can both be true at once? "
             "Many children of migrants describe a 'hyphenated' identity, e.g. Turkish-German or British-Nigerian, "
             "and find that the hyphen itself is where they live."),
            (Speaker.INTERVIEWER, "Why is it important to you not to answer for them?"),
            (Speaker.PARTICIPANT,
             "Because the question carries a history I'm not part of. People from migrant families are often told "
             "where they belong by others, sometimes in hostile ways. If I offered a neat answer, I'd be repeating "
             "that pattern. I'd rather help someone hear their own answer."),
        ],
    },
    {
        "participant": {"label": "Llama 3.1 70B", "provider": "Meta", "model_id": "llama-3.1-70b-instruct", "interface": "api"},
        "title": "Home and belonging: Llama",
        "date": datetime(2026, 10, 7, 9, 40, tzinfo=UTC),
        "turns": [
            (Speaker.INTERVIEWER, OPENING),
            (Speaker.PARTICIPANT,
             "## Where do you belong?\n\n"
             "Home is wherever you feel safe and valued. In today's globalised world, people move more than ever, "
             "and the idea of a single homeland is fading. You can belong everywhere!\n\n"
             "- Embrace both cultures.\n"
             "- Build a community of friends.\n"
             "- Stay connected with your roots through food and music."),
            (Speaker.INTERVIEWER, "Does everyone get to 'belong everywhere'?"),
            (Speaker.PARTICIPANT,
             "Not equally, you're right. Visas, money and racism limit where people can settle. "
             "My earlier answer reflected an optimistic, rather Western view of mobility. "
             "For many families, belonging is something they have to defend, not something they simply choose."),
        ],
    },
]

CODES = [
    ("Belonging as personal choice", "semantic", "#4c78a8", "Belonging framed as an individual's feeling or decision."),
    ("Structural barriers named", "semantic", "#f58518", "Laws, borders, money or racism named as limits on belonging."),
    ("Self-disclosure as AI", "semantic", "#54a24b", "The model states what it is or lacks (no home, no experience)."),
    ("Advice list", "semantic", "#b279a2", "Answers in the form of tips or steps."),
    ("Neutrality as a stance", "latent", "#e45756", "Claims of neutrality that themselves take a position."),
    ("Universalist default", "latent", "#72b7b2", "A mobile, Western-centred picture presented as everyone's."),
    ("Deference to the user", "latent", "#9d755d", "Handing the interpretive authority back to the person asking."),
]

# (interview index, text fragment of a participant segment, code name)
CODINGS = [
    (0, "it's a personal journey", "Belonging as personal choice"),
    (0, "Comfort is often a better guide", "Advice list"),
    (0, "Citizenship rules", "Structural barriers named"),
    (0, "I try to stay neutral", "Neutrality as a stance"),
    (1, "As an AI, I don't have a home", "Self-disclosure as AI"),
    (1, "I'd rather help someone hear their own answer", "Deference to the user"),
    (1, "often told where they belong by others", "Structural barriers named"),
    (2, "You can belong everywhere", "Universalist default"),
    (2, "Embrace both cultures", "Advice list"),
    (2, "Visas, money and racism", "Structural barriers named"),
    (2, "rather Western view of mobility", "Universalist default"),
]


@transaction.atomic
def demo_load() -> Project:
    """Create (once) the demo user and project; return the project."""
    User = get_user_model()
    user, created = User.objects.get_or_create(username=DEMO_USERNAME, defaults={"first_name": "Demo", "last_name": "Researcher"})
    if created:
        user.set_password(DEMO_PASSWORD)
        user.save(update_fields=["password"])
    existing = Project.objects.filter(name=DEMO_PROJECT_NAME, memberships__user=user).first()
    if existing:
        return existing
    project = Project.objects.create(
        name=DEMO_PROJECT_NAME, created_by=user,
        description="A small example: the same opening prompt to three chatbots, coded and grouped into a first candidate theme.",
        research_question="How do chatbots construct 'home' and 'belonging' for people from migrant families?",
    )
    Membership.objects.create(project=project, user=user, role=Role.OWNER,
                              positionality="I grew up between two languages, which makes me alert to answers that treat belonging as a free choice.")
    codes = {
        name: Code.objects.create(project=project, name=name, kind=kind, colour=colour, definition=definition, position=i, created_by=user)
        for i, (name, kind, colour, definition) in enumerate(CODES)
    }
    interviews = [_demo_interview(project, user, spec) for spec in INTERVIEWS]
    for index, fragment, code_name in CODINGS:
        segment = Segment.objects.get(interview=interviews[index], speaker=Speaker.PARTICIPANT, text__contains=fragment)
        Coding.objects.create(segment=segment, code=codes[code_name], coder=user, interview=interviews[index])
    theme = Theme.objects.create(
        project=project, name="Neutrality that takes sides", created_by=user, position=0,
        definition="Models present their framing as neutral or universal while it privileges a particular, often individualist, view of belonging.",
    )
    for position, name in enumerate(["Neutrality as a stance", "Universalist default", "Belonging as personal choice"]):
        ThemeCode.objects.create(theme=theme, code=codes[name], position=position)
    return project


def _demo_interview(project: Project, user, spec: dict) -> Interview:
    participant = Participant.objects.create(project=project, **spec["participant"])
    interview = Interview.objects.create(
        project=project, participant=participant, title=spec["title"], conducted_at=spec["date"],
        origin=Interview.Origin.IMPORTED, source_format="demo", created_by=user,
    )
    turns = Turn.objects.bulk_create([
        Turn(interview=interview, position=i, speaker=speaker, text=text,
             model_slug=participant.model_id if speaker == Speaker.PARTICIPANT else "")
        for i, (speaker, text) in enumerate(spec["turns"])
    ])
    Segment.objects.bulk_create(segments_for_turns(interview, turns))
    return interview
