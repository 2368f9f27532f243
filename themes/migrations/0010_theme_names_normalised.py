from django.db import migrations, models
from django.db.models.functions import Lower

from projects.names import names_made_distinct


def normalise_names(apps, schema_editor):
    """Theme names normalised as they are now stored; live themes whose names are then one get “ (2)”, “ (3)”…"""
    names_made_distinct(apps.get_model("themes", "Theme"), "name", live={"deleted_at__isnull": True}, schema_editor=schema_editor)


class Migration(migrations.Migration):

    dependencies = [
        ('themes', '0009_unique_exemplar_quote'),
    ]

    operations = [
        # Taken off while names change, so no name is refused half-way (it is the same constraint again after).
        migrations.RemoveConstraint(
            model_name='theme',
            name='unique_live_theme_name',
        ),
        migrations.RunPython(normalise_names, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='theme',
            constraint=models.UniqueConstraint(Lower('name'), models.F('project'), condition=models.Q(('deleted_at__isnull', True)), name='unique_live_theme_name', violation_error_message='There is already a theme with this name in this project; choose another name.'),
        ),
    ]
