import datetime as dt
import hashlib
import uuid

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone


LEGACY_LIFETIME_DAYS = 90


def import_legacy_tokens(apps, schema_editor):
    """Tokens of rest_framework.authtoken (plain text, no expiry) become hashed ApiTokens expiring in
    90 days, and the plain-text keys are deleted: scripts keep working until their owners replace them."""
    connection = schema_editor.connection
    if "authtoken_token" not in connection.introspection.table_names():
        return
    ApiToken = apps.get_model("projects", "ApiToken")
    expires_at = timezone.now() + dt.timedelta(days=LEGACY_LIFETIME_DAYS)
    with connection.cursor() as cursor:
        cursor.execute("SELECT key, user_id, created FROM authtoken_token")
        rows = cursor.fetchall()
        for key, user_id, created in rows:
            token = ApiToken.objects.create(user_id=user_id, name="Token from before expiry dates", prefix=key[:8],
                                            key_hash=hashlib.sha256(key.encode()).hexdigest(), expires_at=expires_at)
            ApiToken.objects.filter(pk=token.pk).update(created_at=created)
        cursor.execute("DELETE FROM authtoken_token")


class Migration(migrations.Migration):

    dependencies = [
        ('projects', '0003_auditevent_drop_covered_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ApiToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('uuid', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                ('name', models.CharField(max_length=100)),
                ('key_hash', models.CharField(max_length=64, unique=True)),
                ('prefix', models.CharField(max_length=12)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('expires_at', models.DateTimeField()),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_tokens', to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.RunPython(import_legacy_tokens, migrations.RunPython.noop),
    ]

