from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from projects import views_tokens
from projects.ratelimit import RateLimitedLoginView, RateLimitedPasswordChangeView, admin_login
from projects.views import favicon, healthz
from reports.views import project_home
from reports.views_exchange import import_job, import_job_discard, import_job_send_again, import_project

accounts = [
    path("login/", RateLimitedLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", RateLimitedPasswordChangeView.as_view(), name="password_change"),
    path("password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("tokens/", views_tokens.api_tokens, name="api_tokens"),
    path("tokens/<uuid:api_token_uuid>/revoke/", views_tokens.api_token_revoke, name="api_token_revoke"),
]

api = [
    path("", include("projects.api_urls")),
    path("", include("interviews.api_urls")),
    path("", include("conduct.api_urls")),
    path("", include("coding.api_urls")),
    path("", include("themes.api_urls")),
    path("", include("reports.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's init script as a separate file: CSP forbids inline script.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]

# The Django admin is served only where RTA_ADMIN_ENABLED says so (off in production by default).
admin_urls = [path("admin/login/", admin_login), path("admin/", admin.site.urls)] if settings.RTA_ADMIN_ENABLED else []

# A project's pages under one prefix: a request matches (and converts) the project's UUID once. The apps
# under a prefix of their own cost one test each when they do not match; then the coding workspace's
# patterns, the most requested.
project_pages = [
    path("", project_home, name="project_home"),
    path("conduct/", include("conduct.urls")),
    path("probes/", include("probes.urls")),
    path("themes/", include("themes.urls")),
    path("reports/", include("reports.urls")),
    path("", include("coding.urls")),
    path("", include("interviews.urls")),
]

urlpatterns = [
    *admin_urls,
    path("p/<uuid:project_uuid>/", include(project_pages)),
    path("accounts/", include(accounts)),
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("api/", include(api)),
    path("", include("projects.urls")),
    path("import/", import_project, name="exchange_import"),
    path("import/<uuid:job_uuid>/", import_job, name="exchange_import_job"),
    path("import/<uuid:job_uuid>/send-again/", import_job_send_again, name="exchange_import_job_send_again"),
    path("import/<uuid:job_uuid>/discard/", import_job_discard, name="exchange_import_job_discard"),
]
