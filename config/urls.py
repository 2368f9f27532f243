from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from projects.ratelimit import RateLimitedLoginView
from projects.views import healthz
from reports.views import project_home
from reports.views_exchange import import_project

accounts = [
    path("login/", RateLimitedLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
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

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include(accounts)),
    path("healthz", healthz, name="healthz"),
    path("api/", include(api)),
    path("", include("projects.urls")),
    path("import/", import_project, name="exchange_import"),
    path("p/<uuid:project_uuid>/", project_home, name="project_home"),
    path("p/<uuid:project_uuid>/", include("interviews.urls")),
    path("p/<uuid:project_uuid>/conduct/", include("conduct.urls")),
    path("p/<uuid:project_uuid>/", include("coding.urls")),
    path("p/<uuid:project_uuid>/themes/", include("themes.urls")),
    path("p/<uuid:project_uuid>/reports/", include("reports.urls")),
]
