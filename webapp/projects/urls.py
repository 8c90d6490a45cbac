from django.urls import path

from webapp.projects import views

app_name = "projects"
urlpatterns = [
    path("new/", views.create, name="create"),
    path("<int:pk>/", views.detail, name="detail"),
]
