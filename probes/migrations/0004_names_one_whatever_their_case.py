from django.db import migrations, models
from django.db.models.functions import Lower

from projects.names import names_made_distinct


def normalise_names(apps, schema_editor):
    """Probe names normalised as they are now stored; live probes whose names are then one get “ (2)”, “ (3)”…"""
    names_made_distinct(apps.get_model("probes", "Probe"), "name", live={"deleted_at__isnull": True}, schema_editor=schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('probes', '0003_answer_parsed_with_version'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='probe',
            name='unique_live_probe_name',
        ),
        migrations.RunPython(normalise_names, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='probe',
            constraint=models.UniqueConstraint(Lower('name'), models.F('project'), condition=models.Q(('deleted_at__isnull', True)), name='unique_live_probe_name', violation_error_message='There is already a probe with this name in this project.'),
        ),
    ]
