from django.urls import path

from webapp.catalogue import views

app_name = "catalogue"
urlpatterns = [
    path("project/<int:project_pk>/new/", views.create, name="create"),
    path("<int:pk>/edit/", views.edit, name="edit"),
    path("<int:pk>/delete/", views.delete, name="delete"),
]
