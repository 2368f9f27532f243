"""Pending AI suggestions left on merged codes move to the code each was merged into in the end.

Merges before 7710de8 left a source code's pending suggestions on the archived source, where they could
only be rejected. This moves them as code_merge now does (coding.services.pending_suggestions_moved: a
duplicate of one the run already has on the target goes), following merges of merges to the last code.
Decided suggestions keep the code they were decided with. Run again, it finds nothing to move.
"""

from django.db import migrations, transaction

from coding.services import pending_suggestions_moved

CODES_PER_BATCH = 200


def final_targets(merged_into: dict[int, int]) -> dict[int, int]:
    """Each merged code's last code along its merges (A into B, B into C: A's is C); a cycle has none."""
    finals = {}
    for source in merged_into:
        seen, code = {source}, merged_into[source]
        while code in merged_into and code not in seen:
            seen.add(code)
            code = merged_into[code]
        if code not in seen:
            finals[source] = code
    return finals


def move_left_suggestions(apps, schema_editor):
    Code, Suggestion = apps.get_model("coding", "Code"), apps.get_model("coding", "Suggestion")
    finals = final_targets(dict(Code.objects.filter(merged_into__isnull=False).values_list("id", "merged_into_id")))
    sources = list(Suggestion.objects.filter(code_id__in=finals, status="pending")
                   .order_by("code_id").values_list("code_id", flat=True).distinct())
    for start in range(0, len(sources), CODES_PER_BATCH):
        with transaction.atomic():  # one batch at a time: a big table is not locked for the whole run
            for source in sources[start:start + CODES_PER_BATCH]:
                pending_suggestions_moved(Suggestion, source_id=source, target_id=finals[source])


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('coding', '0009_names_one_whatever_their_case'),
    ]

    operations = [
        migrations.RunPython(move_left_suggestions, migrations.RunPython.noop),
    ]
