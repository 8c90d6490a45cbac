"""The REST API under /api/: one router, one `register` line per viewset, plus the schema."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from webapp.background.api import WorkViewSet
from webapp.catalogue.api import ResourceTypeViewSet
from webapp.projects.api import ProjectViewSet

router = DefaultRouter()
router.register("projects", ProjectViewSet, basename="project")
router.register("work", WorkViewSet, basename="work")
router.register("resource-types", ResourceTypeViewSet, basename="resource-type")

urlpatterns = [
    path("", include(router.urls)),
    path("token/", obtain_auth_token, name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]
