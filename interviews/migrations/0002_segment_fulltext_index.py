from django.db import migrations

# A GIN index on the same expression Django's SearchVector("text", config="english")
# produces, so full-text search over segments uses it. PostgreSQL only: the embedded
# SQLite default has no full-text search (search falls back to icontains there).
CREATE = (
    "CREATE INDEX IF NOT EXISTS segment_text_fts ON interviews_segment "
    "USING gin (to_tsvector('english'::regconfig, COALESCE(text, ''::text)))"
)
DROP = "DROP INDEX IF EXISTS segment_text_fts"


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("interviews", "0001_initial")]
    operations = [migrations.RunPython(create_index, drop_index)]
