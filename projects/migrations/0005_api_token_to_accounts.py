"""API tokens moved to the accounts app (they belong to a person, not a project, so no project
backup carries them): every row is copied as it is, hash, expiry and all, then projects.ApiToken goes."""

from django.db import migrations


def copy_tokens_to_accounts(apps, schema_editor):
    # In SQL: the ORM would stamp created_at (auto_now_add) with the time of the move.
    old, new = apps.get_model("projects", "ApiToken")._meta.db_table, apps.get_model("accounts", "ApiToken")._meta.db_table
    columns = "uuid, user_id, name, key_hash, prefix, created_at, expires_at, last_used_at"
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {new} ({columns}) SELECT {columns} FROM {old}")


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0004_api_token"),
        ("accounts", "0001_api_token"),
    ]

    operations = [
        migrations.RunPython(copy_tokens_to_accounts, migrations.RunPython.noop),
        migrations.DeleteModel(name="ApiToken"),
    ]
