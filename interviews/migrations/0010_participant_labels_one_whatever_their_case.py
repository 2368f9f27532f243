from django.db import migrations, models
from django.db.models.functions import Lower

from projects.names import names_made_distinct


def normalise_labels(apps, schema_editor):
    """Participant labels normalised as they are now stored; participants whose labels are then one get “ (2)”, “ (3)”…"""
    names_made_distinct(apps.get_model("interviews", "Participant"), "label", schema_editor=schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('interviews', '0009_guide_names_one_whatever_their_case'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='participant',
            name='unique_participant_label',
        ),
        migrations.RunPython(normalise_labels, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='participant',
            constraint=models.UniqueConstraint(Lower('label'), models.F('project'), name='unique_participant_label', violation_error_message='Another participant in this project already has this label.'),
        ),
    ]
