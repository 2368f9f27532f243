from django.db import migrations, models
from django.db.models.functions import Lower

SUFFIX_LIMIT = 200  # Theme.name's max_length


def rename_duplicates(apps, schema_editor):
    """Live themes sharing a name (whatever its case) before names had to be unique: the oldest keeps the name, the
    others get “ (2)”, “ (3)”… so nothing is lost and the team can tell them apart (and rename them as they see fit)."""
    Theme = apps.get_model("themes", "Theme")
    live = Theme.objects.filter(deleted_at__isnull=True)
    clashing = (live.annotate(key=Lower("name")).values("project_id", "key").annotate(n=models.Count("id")).filter(n__gt=1))
    for row in clashing:
        taken = {n.lower() for n in live.filter(project_id=row["project_id"]).values_list("name", flat=True)}
        same = live.filter(project_id=row["project_id"], name__iexact=row["key"]).order_by("created_at", "id")
        for theme in list(same)[1:]:
            number = 2
            while True:
                suffix = f" ({number})"
                candidate = theme.name[: SUFFIX_LIMIT - len(suffix)] + suffix
                if candidate.lower() not in taken:
                    break
                number += 1
            taken.add(candidate.lower())
            theme.name = candidate
            theme.save(update_fields=["name"])
    if schema_editor is not None and schema_editor.connection.vendor == "postgresql":
        # PostgreSQL builds no index on a table with checks still pending in this transaction.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):

    dependencies = [
        ('themes', '0006_review_notes_version'),
    ]

    operations = [
        migrations.RunPython(rename_duplicates, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='theme',
            constraint=models.UniqueConstraint(Lower('name'), models.F('project'), condition=models.Q(('deleted_at__isnull', True)), name='unique_live_theme_name', violation_error_message='There is already a theme with this name in this project; choose another name.'),
        ),
    ]
