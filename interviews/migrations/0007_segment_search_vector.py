from django.db import migrations

# Each segment's english tsvector, stored in a generated column with a GIN index, replacing
# 0002's expression index: search ranks with ts_rank on the stored vector instead of running
# to_tsvector again for every match (33,000+ for a common word in a large project). PostgreSQL
# computes the column on every INSERT and UPDATE, so every writer (COPY, bulk_create, raw
# inserts) keeps it right. PostgreSQL only, and so not a model field: the embedded SQLite default
# has no tsvector (search falls back to icontains there). coding.queries.search_segments reads it.
# Adding a stored column rewrites the table (about 20 s for 400,000 segments).
FORWARD = [
    "ALTER TABLE interviews_segment ADD COLUMN IF NOT EXISTS search_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english'::regconfig, COALESCE(text, ''::text))) STORED",
    "CREATE INDEX IF NOT EXISTS segment_search_vector ON interviews_segment USING gin (search_vector)",
    "DROP INDEX IF EXISTS segment_text_fts",
]
BACKWARD = [
    "CREATE INDEX IF NOT EXISTS segment_text_fts ON interviews_segment "
    "USING gin (to_tsvector('english'::regconfig, COALESCE(text, ''::text)))",
    "ALTER TABLE interviews_segment DROP COLUMN IF EXISTS search_vector",  # drops its index too
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql)
    return run


class Migration(migrations.Migration):
    dependencies = [("interviews", "0006_merge_import_outbox_and_tool_speaker")]
    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
