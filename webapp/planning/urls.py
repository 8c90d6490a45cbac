from django.urls import path

from webapp.planning import views

app_name = "planning"
urlpatterns = [
    path("", views.index, name="index"),
    path("project/<int:project_pk>/", views.project_page, name="project"),
    path("project/<int:project_pk>/new/", views.create, name="create"),
    path("project/<int:project_pk>/clusters/new/", views.create_cluster, name="create-cluster"),
    path("cluster/<int:pk>/edit/", views.edit_cluster, name="edit-cluster"),
    path("cluster/<int:pk>/delete/", views.delete_cluster, name="delete-cluster"),
    path("<int:pk>/", views.detail, name="detail"),
    path("result/<int:pk>/", views.result, name="result"),
]
