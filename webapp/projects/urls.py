from django.urls import path

from webapp.dashboard import project_page
from webapp.projects import views

app_name = "projects"
urlpatterns = [
    path("new/", views.create, name="create"),
    path("<int:pk>/", project_page.detail, name="detail"),
]
