"""Live interviews stored their first turn at position 1, imported ones at 0, so the same "turn 3" meant
different turns. Live interviews now start at 0 too; this moves the turns of existing live interviews
down by one (through a large offset, since a turn may not take a position another still holds)."""

from django.db import migrations
from django.db.models import F, Min

OFFSET = 1_000_000


def number_from_zero(apps, schema_editor):
    Interview = apps.get_model("interviews", "Interview")
    Turn = apps.get_model("interviews", "Turn")
    starts = (Interview.objects.filter(origin="live").annotate(first=Min("turns__position"))
              .filter(first__gte=1).values_list("id", "first"))
    for interview_id, first in starts.iterator():
        turns = Turn.objects.filter(interview_id=interview_id)
        turns.update(position=F("position") + OFFSET)
        turns.update(position=F("position") - OFFSET - first)


class Migration(migrations.Migration):

    dependencies = [
        ("conduct", "0002_live_endpoint_streaming_and_learned_limits"),
        ("interviews", "0004_import_job_analysing"),
    ]

    operations = [migrations.RunPython(number_from_zero, migrations.RunPython.noop)]
