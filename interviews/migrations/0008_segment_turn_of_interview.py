import django.db.models.deletion
from django.db import migrations, models

# Every inserted segment fired two deferred foreign-key checks at commit, one on interview_id and one
# on turn_id (about 16,000 for the 20-interview peer corpus: half the commit of an import). One
# composite key (turn_id, interview_id) -> interviews_turn (id, interview_id) implies both: the turn
# exists, and the segment's interview is that turn's, which exists by the turn's own foreign key. It
# is stricter than the two it replaces (nothing checked before that the two agree), and costs one
# check per segment. interviews_turn needs a unique constraint on (id, interview_id) for it to
# reference; id alone is already unique, so that constraint never rejects a row.
#
# PostgreSQL only, like 0007: on the embedded SQLite default Django's two per-column keys stay.
# The model still declares both ForeignKeys (the ORM joins and cascades through them). A later
# AlterField on either field finds no single-column key here and, unless it drops one, adds none:
# the composite key stays in force either way.
SEGMENT = "interviews_segment"
COMPOSITE = "segment_turn_of_interview"
TURN_UNIQUE = "turn_id_interview"
# The names Django gave the per-column keys in 0001 (recreated under the same names on the way back).
SINGLE_COLUMN = {
    "interview_id": ("interviews_segment_interview_id_1975594f_fk_interview", "interviews_interview"),
    "turn_id": ("interviews_segment_turn_id_468e0d72_fk_interviews_turn_id", "interviews_turn"),
}
FIND_SINGLE_COLUMN_KEY = """
    SELECT c.conname FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
    WHERE c.conrelid = %s::regclass AND c.contype = 'f' AND cardinality(c.conkey) = 1 AND a.attname = %s
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"ALTER TABLE interviews_turn ADD CONSTRAINT {TURN_UNIQUE} UNIQUE (id, interview_id)")
    # NOT VALID, then VALIDATE: existing rows are checked without blocking writes to the turns meanwhile.
    schema_editor.execute(
        f"ALTER TABLE {SEGMENT} ADD CONSTRAINT {COMPOSITE} FOREIGN KEY (turn_id, interview_id) "
        f"REFERENCES interviews_turn (id, interview_id) DEFERRABLE INITIALLY DEFERRED NOT VALID"
    )
    schema_editor.execute(f"ALTER TABLE {SEGMENT} VALIDATE CONSTRAINT {COMPOSITE}")
    with schema_editor.connection.cursor() as cursor:
        for column in SINGLE_COLUMN:
            cursor.execute(FIND_SINGLE_COLUMN_KEY, [SEGMENT, column])
            for (name,) in cursor.fetchall():
                schema_editor.execute(f'ALTER TABLE {SEGMENT} DROP CONSTRAINT "{name}"')


def backward(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for column, (name, table) in SINGLE_COLUMN.items():
        schema_editor.execute(
            f'ALTER TABLE {SEGMENT} ADD CONSTRAINT "{name}" FOREIGN KEY ({column}) REFERENCES {table} (id) '
            f"DEFERRABLE INITIALLY DEFERRED"
        )
    schema_editor.execute(f"ALTER TABLE {SEGMENT} DROP CONSTRAINT {COMPOSITE}")
    schema_editor.execute(f"ALTER TABLE interviews_turn DROP CONSTRAINT {TURN_UNIQUE}")


class Migration(migrations.Migration):
    dependencies = [("interviews", "0007_segment_search_vector")]
    operations = [
        # unique_segment_position (interview, position) serves every lookup by interview: the
        # single-column index only cost an insert per segment.
        migrations.AlterField(
            model_name="segment",
            name="interview",
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="segments", to="interviews.interview"),
        ),
        migrations.RunPython(forward, backward),
    ]
