"""The REST API under /api/: one router, one `register` line per viewset, plus the schema."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from webapp.accounts.api import ObtainTokenView, TokenViewSet
from webapp.background.api import WorkViewSet
from webapp.catalogue.api import ResourceTypeViewSet
from webapp.costs.api import CostReportView
from webapp.jobs.api import JobViewSet
from webapp.modelzoo.api import RegisteredModelViewSet
from webapp.planning.api import ClusterViewSet, PlanningRequestViewSet, PlanResultViewSet
from webapp.profiling.api import ProfileRunViewSet
from webapp.projects.api import InvitationViewSet, MembershipViewSet, ProjectViewSet
from webapp.rltraining.api import RLTrainingRunViewSet

router = DefaultRouter()
router.register("projects", ProjectViewSet, basename="project")
router.register("memberships", MembershipViewSet, basename="membership")
router.register("invitations", InvitationViewSet, basename="invitation")
router.register("work", WorkViewSet, basename="work")
router.register("resource-types", ResourceTypeViewSet, basename="resource-type")
router.register("models", RegisteredModelViewSet, basename="model")
router.register("profile-runs", ProfileRunViewSet, basename="profile-run")
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("planning-requests", PlanningRequestViewSet, basename="planning-request")
router.register("plan-results", PlanResultViewSet, basename="plan-result")
router.register("rl-training-runs", RLTrainingRunViewSet, basename="rl-training-run")
router.register("jobs", JobViewSet, basename="job")
router.register("tokens", TokenViewSet, basename="api-token")

urlpatterns = [
    path("", include(router.urls)),
    path("costs/", CostReportView.as_view(), name="api-costs"),
    path("token/", ObtainTokenView.as_view(), name="api-sign-in"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]
