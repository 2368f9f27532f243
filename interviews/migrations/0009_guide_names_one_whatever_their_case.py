from django.db import migrations, models
from django.db.models.functions import Lower

from projects.names import names_made_distinct


def normalise_names(apps, schema_editor):
    """Guide names normalised as they are now stored; guides whose names are then one get “ (2)”, “ (3)”…"""
    names_made_distinct(apps.get_model("interviews", "Guide"), "name", schema_editor=schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('interviews', '0008_segment_turn_of_interview'),
    ]

    operations = [
        migrations.RunPython(normalise_names, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='guide',
            constraint=models.UniqueConstraint(Lower('name'), models.F('project'), name='unique_guide_name', violation_error_message='There is already a guide with this name in this project.'),
        ),
    ]
