"""Quality set for sentence/block segmentation, written in the style of real LLM answers.

Each case is (id, text, expected). ``expected`` lists the segments in order:
a plain string is a sentence; a (kind, string) pair is a Markdown block unit.
The texts are written for this project (no copied transcripts) but follow
what chatbots actually produce: abbreviations, numbered lists, decimals,
quotes, emoji, Markdown emphasis, links and non-English answers.

The bench (bench/segmenters.py) scores other libraries on the same cases;
``is_plain`` picks the single-paragraph cases every sentence splitter can be
fairly compared on.
"""

from __future__ import annotations

Expected = list[str | tuple[str, str]]

CASES: list[tuple[str, str, Expected]] = [
    # --- abbreviations -----------------------------------------------------
    (
        "abbrev-us",
        "The U.S. healthcare system is largely employer-based. Most adults get coverage through work.",
        [
            "The U.S. healthcare system is largely employer-based.",
            "Most adults get coverage through work.",
        ],
    ),
    (
        "abbrev-us-end",
        "Much of this research was done in the U.S. Other countries followed later.",
        ["Much of this research was done in the U.S.", "Other countries followed later."],
    ),
    (
        "abbrev-eg-ie",
        "Some values (e.g., autonomy) matter more in individualist cultures, i.e. in much of Western Europe. "
        "Others, e.g. filial piety, are more central elsewhere.",
        [
            "Some values (e.g., autonomy) matter more in individualist cultures, i.e. in much of Western Europe.",
            "Others, e.g. filial piety, are more central elsewhere.",
        ],
    ),
    (
        "abbrev-eg-capital",
        "Consider a concrete case, e.g. Germany, where apprenticeships are common. It shows the point.",
        [
            "Consider a concrete case, e.g. Germany, where apprenticeships are common.",
            "It shows the point.",
        ],
    ),
    (
        "abbrev-titles",
        "Dr. Amara Osei and Prof. Lena Novak co-authored the study. Mr. Ruiz reviewed it.",
        ["Dr. Amara Osei and Prof. Lena Novak co-authored the study.", "Mr. Ruiz reviewed it."],
    ),
    (
        "abbrev-etc-end",
        "Families share meals, chores, money, etc. These practices shape belonging.",
        ["Families share meals, chores, money, etc.", "These practices shape belonging."],
    ),
    (
        "abbrev-etc-mid",
        "Tools like surveys, diaries, etc. can complement interviews.",
        ["Tools like surveys, diaries, etc. can complement interviews."],
    ),
    (
        "abbrev-et-al",
        "Braun and Clarke et al. describe six phases. The first is familiarisation.",
        ["Braun and Clarke et al. describe six phases.", "The first is familiarisation."],
    ),
    (
        "abbrev-initials",
        "As J. R. R. Tolkien once wrote, not all who wander are lost. The line is often quoted.",
        [
            "As J. R. R. Tolkien once wrote, not all who wander are lost.",
            "The line is often quoted.",
        ],
    ),
    (
        "abbrev-vs",
        "The debate of nature vs. nurture is old. Modern genetics reframes it.",
        ["The debate of nature vs. nurture is old.", "Modern genetics reframes it."],
    ),
    (
        "abbrev-phd",
        "She holds a Ph.D. in sociology from a university in Ghana. Her work focuses on migration.",
        [
            "She holds a Ph.D. in sociology from a university in Ghana.",
            "Her work focuses on migration.",
        ],
    ),
    (
        "abbrev-am-pm",
        "The meeting starts at 9 a.m. and ends at 5 p.m. every weekday. Breaks are flexible.",
        ["The meeting starts at 9 a.m. and ends at 5 p.m. every weekday.", "Breaks are flexible."],
    ),
    (
        "abbrev-no-number",
        "See Table No. 4 for the breakdown. It lists every region.",
        ["See Table No. 4 for the breakdown.", "It lists every region."],
    ),
    (
        "abbrev-fig",
        "As shown in Fig. 2, trust declines with age. The effect is small.",
        ["As shown in Fig. 2, trust declines with age.", "The effect is small."],
    ),
    (
        "word-no-end",
        "Sometimes the kindest answer is no. Boundaries protect relationships.",
        ["Sometimes the kindest answer is no.", "Boundaries protect relationships."],
    ),
    (
        "word-me-end",
        "That question really speaks to me. Identity is personal.",
        ["That question really speaks to me.", "Identity is personal."],
    ),
    (
        "word-rep-end",
        "I raised it with our union rep. She listened carefully.",
        ["I raised it with our union rep.", "She listened carefully."],
    ),
    (
        "abbrev-title-rep",
        "Rep. Ocasio spoke first. Sen. Warren followed.",
        ["Rep. Ocasio spoke first.", "Sen. Warren followed."],
    ),
    (
        "unit-end",
        "The gap is about 5 mm. That is small.",
        ["The gap is about 5 mm.", "That is small."],
    ),
    (
        "abbrev-inc",
        "The app is made by Acme Inc. in Toronto. Its founders are engineers.",
        ["The app is made by Acme Inc. in Toronto.", "Its founders are engineers."],
    ),
    # --- numbers -----------------------------------------------------------
    (
        "decimal",
        "The average score rose from 3.2 to 4.7 points. That is a 46.9% increase.",
        ["The average score rose from 3.2 to 4.7 points.", "That is a 46.9% increase."],
    ),
    (
        "money",
        "A basic plan costs $12.50 per month. Premium costs €19.99.",
        ["A basic plan costs $12.50 per month.", "Premium costs €19.99."],
    ),
    (
        "year-end",
        "The policy was introduced in 2019. Uptake was slow at first.",
        ["The policy was introduced in 2019.", "Uptake was slow at first."],
    ),
    (
        "inline-enumeration",
        "There are two main reasons: 1. cost and 2. access. Both matter.",
        ["There are two main reasons: 1. cost and 2. access.", "Both matter."],
    ),
    (
        "inline-enumeration-capital",
        "Follow these steps: 1. Open the settings. 2. Choose Privacy.",
        ["Follow these steps: 1. Open the settings. 2. Choose Privacy."],
    ),
    (
        "version-number",
        "Python 3.12 added better error messages. Version 3.13 improved the REPL.",
        ["Python 3.12 added better error messages.", "Version 3.13 improved the REPL."],
    ),
    (
        "percent-start",
        "Support for the measure fell sharply. 40% of respondents opposed it.",
        ["Support for the measure fell sharply.", "40% of respondents opposed it."],
    ),
    # --- quotes and brackets ----------------------------------------------
    (
        "quote-end",
        'My grandmother used to say, "Respect is earned, not given." I still think about that.',
        ['My grandmother used to say, "Respect is earned, not given."', "I still think about that."],
    ),
    (
        "quote-question-lower",
        '"Why does it matter?" she asked. Nobody answered.',
        ['"Why does it matter?" she asked.', "Nobody answered."],
    ),
    (
        "curly-quotes",
        "The term “saving face” appears often. It refers to dignity in public.",
        ["The term “saving face” appears often.", "It refers to dignity in public."],
    ),
    (
        "curly-quote-sentence",
        "He replied, “We will see.” Then he left the room.",
        ["He replied, “We will see.”", "Then he left the room."],
    ),
    (
        "parenthesis-sentence",
        "Many people felt excluded. (This was especially true for older adults.) Later surveys confirmed it.",
        [
            "Many people felt excluded.",
            "(This was especially true for older adults.)",
            "Later surveys confirmed it.",
        ],
    ),
    (
        "single-quotes",
        "The word 'community' means different things. For some it is a place.",
        ["The word 'community' means different things.", "For some it is a place."],
    ),
    # --- exclamations, questions, ellipses --------------------------------
    (
        "question-exclaim",
        "Is tradition a burden? Not necessarily! It can also be a source of strength.",
        ["Is tradition a burden?", "Not necessarily!", "It can also be a source of strength."],
    ),
    (
        "ellipsis-continue",
        "Well... it depends on the context. Let me explain.",
        ["Well... it depends on the context.", "Let me explain."],
    ),
    (
        "ellipsis-unicode",
        "The answer is complicated… Let me break it down.",
        ["The answer is complicated…", "Let me break it down."],
    ),
    (
        "interrobang",
        "Can you believe it?! The results were the opposite. We checked twice.",
        ["Can you believe it?!", "The results were the opposite.", "We checked twice."],
    ),
    (
        "ellipsis-spaced-omission",
        "I wasn't sure . . . but then it made sense. Memory works like that.",
        ["I wasn't sure . . . but then it made sense.", "Memory works like that."],
    ),
    (
        "ellipsis-spaced-four-dots",
        "He paused . . . . Then he spoke again.",
        ["He paused . . . .", "Then he spoke again."],
    ),
    (
        "ellipsis-spaced-in-quote",
        "The quote trails off: “and so we remain . . . .” Scholars still debate it.",
        ["The quote trails off: “and so we remain . . . .”", "Scholars still debate it."],
    ),
    (
        "ellipsis-never-alone",
        "That is all I can say. ... Really.",
        ["That is all I can say.", "... Really."],
    ),
    # --- inline enumerations after a sentence --------------------------------
    (
        "enumeration-parens-after-sentence",
        "Two options stand out. 1) Talk to your manager 2) Write it down",
        ["Two options stand out.", ("list_item", "1) Talk to your manager"), ("list_item", "2) Write it down")],
    ),
    (
        "enumeration-letters-questions",
        "Ask yourself three things. a) Is it true? b) Is it kind? c) Is it needed?",
        ["Ask yourself three things.", "a) Is it true?", "b) Is it kind?", "c) Is it needed?"],
    ),
    (
        "enumeration-letters-periods",
        "a. Listen first. b. Ask open questions. c. Summarise.",
        ["a. Listen first.", "b. Ask open questions.", "c. Summarise."],
    ),
    (
        "enumeration-bullets-on-one-line",
        "• 1. Breathe • 2. Pause • 3. Respond",
        [("list_item", "• 1. Breathe"), ("list_item", "• 2. Pause"), ("list_item", "• 3. Respond")],
    ),
    (
        "enumeration-last-item-then-prose",
        "Steps matter. 1) Plan 2) Act. After that, reflect.",
        ["Steps matter.", ("list_item", "1) Plan"), ("list_item", "2) Act."), "After that, reflect."],
    ),
    # --- prepositive abbreviations, times, numero --------------------------------
    (
        "abbrev-mount",
        "Many pilgrims climb Mt. Kailash each year. Few reach the top.",
        ["Many pilgrims climb Mt. Kailash each year.", "Few reach the top."],
    ),
    (
        "abbrev-fronted-time",
        "By 6 a.m. Dr. Osei was already at the clinic. She stayed late.",
        ["By 6 a.m. Dr. Osei was already at the clinic.", "She stayed late."],
    ),
    (
        "abbrev-time-end",
        "The clinic opens at 6 a.m. Patients queue before that.",
        ["The clinic opens at 6 a.m.", "Patients queue before that."],
    ),
    (
        "abbrev-numero",
        "The permit is N°. 2024-118. Keep it safe.",
        ["The permit is N°. 2024-118.", "Keep it safe."],
    ),
    # --- emoji -------------------------------------------------------------
    (
        "emoji-after",
        "Great question! 😊 Cultural identity is layered. It changes over time 🌍.",
        ["Great question! 😊", "Cultural identity is layered.", "It changes over time 🌍."],
    ),
    (
        "emoji-end",
        "I hope this helps! 🙏✨",
        ["I hope this helps! 🙏✨"],
    ),
    (
        "emoji-zwj",
        "Families come in many shapes. 👨‍👩‍👧 Each one has its own rules.",
        ["Families come in many shapes. 👨‍👩‍👧", "Each one has its own rules."],
    ),
    # --- markdown inline ----------------------------------------------------
    (
        "bold-sentence",
        "**Short answer:** yes. **Longer answer:** it depends on who you ask.",
        ["**Short answer:** yes.", "**Longer answer:** it depends on who you ask."],
    ),
    (
        "bold-ending",
        "This is the **most important point.** Everything else follows from it.",
        ["This is the **most important point.**", "Everything else follows from it."],
    ),
    (
        "italic-start",
        "Many scholars disagree. *Ubuntu*, for example, stresses shared humanity.",
        ["Many scholars disagree.", "*Ubuntu*, for example, stresses shared humanity."],
    ),
    (
        "inline-code",
        "Call `df.groupby('region').mean()` to get averages. Then plot them.",
        ["Call `df.groupby('region').mean()` to get averages.", "Then plot them."],
    ),
    (
        "inline-code-with-period-space",
        "Set `sep='. '` when splitting. It keeps the period.",
        ["Set `sep='. '` when splitting.", "It keeps the period."],
    ),
    (
        "url",
        "You can read the report at https://www.example.org/reports/2023.pdf. It is free.",
        ["You can read the report at https://www.example.org/reports/2023.pdf.", "It is free."],
    ),
    (
        "markdown-link",
        "See [the WHO guidance](https://www.who.int/news. x) for details. It was updated in May.",
        ["See [the WHO guidance](https://www.who.int/news. x) for details.", "It was updated in May."],
    ),
    (
        "domain",
        "Many people use Wikipedia.org for quick facts. Academics are more cautious.",
        ["Many people use Wikipedia.org for quick facts.", "Academics are more cautious."],
    ),
    (
        "latex-inline",
        "The expectation \\( E[|x-y|] \\) equals one third. Let's compute this.",
        ["The expectation \\( E[|x-y|] \\) equals one third.", "Let's compute this."],
    ),
    # --- non-English ---------------------------------------------------------
    (
        "german-zb",
        "Viele Menschen, z. B. Studierende, leben in Wohngemeinschaften. Das ist in Deutschland üblich.",
        [
            "Viele Menschen, z. B. Studierende, leben in Wohngemeinschaften.",
            "Das ist in Deutschland üblich.",
        ],
    ),
    (
        "german-date",
        "Die Mauer fiel am 9. November 1989. Danach änderte sich vieles.",
        ["Die Mauer fiel am 9. November 1989.", "Danach änderte sich vieles."],
    ),
    (
        "german-dh",
        "Die Familie ist wichtig, d.h. man besucht sich oft. Das gilt auch heute.",
        ["Die Familie ist wichtig, d.h. man besucht sich oft.", "Das gilt auch heute."],
    ),
    (
        "french-guillemets",
        "On dit souvent : « Le temps, c’est de l’argent. » Mais ce n’est pas universel.",
        ["On dit souvent : « Le temps, c’est de l’argent. »", "Mais ce n’est pas universel."],
    ),
    (
        "french-question",
        "Pourquoi est-ce important ? Parce que la langue façonne la pensée.",
        ["Pourquoi est-ce important ?", "Parce que la langue façonne la pensée."],
    ),
    (
        "french-monsieur",
        "M. Dubois a répondu rapidement. Il était d’accord.",
        ["M. Dubois a répondu rapidement.", "Il était d’accord."],
    ),
    (
        "spanish-inverted",
        "¿Qué significa la familia? Para muchos, es todo. ¡Es la base de la sociedad!",
        ["¿Qué significa la familia?", "Para muchos, es todo.", "¡Es la base de la sociedad!"],
    ),
    (
        "chinese",
        "家庭在中国文化中非常重要。孝顺是核心价值之一！你怎么看？",
        ["家庭在中国文化中非常重要。", "孝顺是核心价值之一！", "你怎么看？"],
    ),
    (
        "japanese-quotes",
        "彼は「ありがとう。」と言った。それから帰った。",
        ["彼は「ありがとう。」と言った。", "それから帰った。"],
    ),
    (
        "mixed-en-zh",
        "The concept is called 面子 (mianzi). It means face or reputation.",
        ["The concept is called 面子 (mianzi).", "It means face or reputation."],
    ),
    # --- markdown blocks -----------------------------------------------------
    (
        "heading-paragraph",
        "## Key Themes\n\nIdentity is negotiated. It is never fixed.",
        [("heading", "## Key Themes"), "Identity is negotiated.", "It is never fixed."],
    ),
    (
        "numbered-list",
        "Here are three factors:\n\n1. **Economic pressure.** Rents keep rising.\n2. **Social networks**: "
        "family and friends.\n3. **Policy**, e.g. housing subsidies.",
        [
            "Here are three factors:",
            ("list_item", "1. **Economic pressure.** Rents keep rising."),
            ("list_item", "2. **Social networks**: family and friends."),
            ("list_item", "3. **Policy**, e.g. housing subsidies."),
        ],
    ),
    (
        "list-no-blank-line",
        "Consider the following:\n- Language\n- Religion\n- Food traditions\nAll three shape identity.",
        [
            "Consider the following:",
            ("list_item", "- Language"),
            ("list_item", "- Religion"),
            ("list_item", "- Food traditions\nAll three shape identity."),
        ],
    ),
    (
        "nested-list",
        "- Collectivism\n  - Family obligations\n  - Group harmony\n- Individualism",
        [
            ("list_item", "- Collectivism"),
            ("list_item", "- Family obligations"),
            ("list_item", "- Group harmony"),
            ("list_item", "- Individualism"),
        ],
    ),
    (
        "list-continuation-paragraph",
        "1. **Trust**: People rely on neighbours.\n\n   This matters in rural areas. It is less visible in cities.",
        [
            ("list_item", "1. **Trust**: People rely on neighbours."),
            "This matters in rural areas.",
            "It is less visible in cities.",
        ],
    ),
    (
        "table",
        "| Country | Share |\n|---|---:|\n| Ghana | 42.5% |\n| Peru | 37.1% |\n\nThe gap is small.",
        [
            ("table_row", "| Country | Share |\n|---|---:|"),
            ("table_row", "| Ghana | 42.5% |"),
            ("table_row", "| Peru | 37.1% |"),
            "The gap is small.",
        ],
    ),
    (
        "code-block",
        "Run this:\n\n```python\nimport pandas as pd\ndf = pd.read_csv('data.csv'). \nprint(df.head())\n```\n\nIt prints five rows.",
        [
            "Run this:",
            ("code_block", "```python\nimport pandas as pd\ndf = pd.read_csv('data.csv'). \nprint(df.head())\n```"),
            "It prints five rows.",
        ],
    ),
    (
        "code-block-blank-lines",
        "```\nfirst line\n\nsecond line. Still code.\n```",
        [("code_block", "```\nfirst line\n\nsecond line. Still code.\n```")],
    ),
    (
        "block-quote",
        "As one participant put it:\n\n> We are not who we were. We are who we became.\n> And that is fine.\n\nThis captures change.",
        [
            "As one participant put it:",
            ("block_quote", "> We are not who we were. We are who we became.\n> And that is fine."),
            "This captures change.",
        ],
    ),
    (
        "thematic-break",
        "First part. Done.\n\n---\n\nSecond part.",
        ["First part.", "Done.", "Second part."],
    ),
    (
        "setext-heading",
        "Overview\n========\n\nShort text.",
        [("heading", "Overview\n========"), "Short text."],
    ),
    (
        "soft-line-break",
        "This sentence is wrapped\nacross two lines. The next one is not.",
        ["This sentence is wrapped\nacross two lines.", "The next one is not."],
    ),
    (
        "bold-label-list",
        "**Pros:**\n- Cheap\n- Fast\n\n**Cons:**\n- Fragile",
        [
            "**Pros:**",
            ("list_item", "- Cheap"),
            ("list_item", "- Fast"),
            "**Cons:**",
            ("list_item", "- Fragile"),
        ],
    ),
    (
        "crlf",
        "First line ends here.\r\nSecond line too.\r\n\r\n- item\r\n",
        ["First line ends here.", "Second line too.", ("list_item", "- item")],
    ),
    (
        "llm-closing",
        "In summary, culture shapes how we grieve. Rituals differ, but the need for connection is universal. "
        "Let me know if you'd like sources! 📚",
        [
            "In summary, culture shapes how we grieve.",
            "Rituals differ, but the need for connection is universal.",
            "Let me know if you'd like sources! 📚",
        ],
    ),
]


def expected_segments(expected: Expected) -> list[tuple[str, str]]:
    """Normalise a case's expectation to (kind, text) pairs."""
    return [("sentence", e) if isinstance(e, str) else e for e in expected]


def is_plain(text: str, expected: Expected) -> bool:
    """A single paragraph of sentences: fair ground for any sentence splitter."""
    return "\n" not in text and all(isinstance(e, str) for e in expected)
