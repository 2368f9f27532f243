from django.db import migrations, models
from django.db.models.functions import Lower

from projects.names import names_made_distinct


def normalise_names(apps, schema_editor):
    """Code names normalised as they are now stored; live codes whose names are then one get “ (2)”, “ (3)”…"""
    names_made_distinct(apps.get_model("coding", "Code"), "name", live={"deleted_at__isnull": True}, schema_editor=schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('coding', '0008_reader_approved_url'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='code',
            name='unique_live_code_name',
        ),
        migrations.RunPython(normalise_names, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='code',
            constraint=models.UniqueConstraint(Lower('name'), models.F('project'), condition=models.Q(('deleted_at__isnull', True)), name='unique_live_code_name', violation_error_message='There is already a code with this name in this project.'),
        ),
    ]
