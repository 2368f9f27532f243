from __future__ import annotations

from django.contrib import admin

from interviews.models import Guide, GuideVersion, Interview, Participant

admin.site.register(Participant)
admin.site.register(Guide)
admin.site.register(GuideVersion)
admin.site.register(Interview)
