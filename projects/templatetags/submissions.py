"""{% submission_key %}: the hidden field that makes a write form's repeated sends write once (projects/submissions.py).

Put it in every form whose view is decorated with @submitted_once; each rendering of the form gets a new key, so a
corrected or a second, deliberate send of a form the server rendered again is a new submission.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from projects.submissions import FIELD, new_submission_key

register = template.Library()


@register.simple_tag
def submission_key() -> str:
    return format_html('<input type="hidden" name="{}" value="{}">', FIELD, new_submission_key())
