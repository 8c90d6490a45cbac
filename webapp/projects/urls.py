from django.urls import path

from webapp.dashboard import project_page
from webapp.projects import views

app_name = "projects"
urlpatterns = [
    path("new/", views.create, name="create"),
    path("<int:pk>/", project_page.detail, name="detail"),
    path("<int:pk>/team/", views.team, name="team"),
    path("<int:pk>/team/invite/", views.invite, name="invite"),
    path("members/<int:pk>/role/", views.set_role, name="set-role"),
    path("members/<int:pk>/remove/", views.remove, name="remove-member"),
    path("invitations/<int:pk>/revoke/", views.revoke, name="revoke-invitation"),
    path("join/", views.accept, name="accept"),
]
