from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from webapp.accounts.views import LoginView

urlpatterns = [
    path("", include("webapp.dashboard.urls")),
    path("projects/", include("webapp.projects.urls")),
    path("work/", include("webapp.background.urls")),
    path("jobs/", include("webapp.jobs.urls")),
    path("costs/", include("webapp.costs.urls")),
    path("budgets/", include("webapp.budgets.urls")),
    path("models/", include("webapp.modelzoo.urls")),
    path("resources/", include("webapp.catalogue.urls")),
    path("profiling/", include("webapp.profiling.urls")),
    path("planning/", include("webapp.planning.urls")),
    path("rl/", include("webapp.rltraining.urls")),
    path("healthz", include("webapp.health.urls")),
    path("api/", include("webapp.api_urls")),
    path("account/", include("webapp.accounts.urls")),
    path("login/", LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
