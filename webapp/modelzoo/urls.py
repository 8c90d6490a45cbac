from django.urls import path

from webapp.dashboard import model_page
from webapp.modelzoo import edit_views, views

app_name = "modelzoo"
urlpatterns = [
    path("", views.index, name="index"),
    path("project/<int:project_pk>/", views.model_list, name="list"),
    path("project/<int:project_pk>/add/", views.add, name="add"),
    path("project/<int:project_pk>/import/", views.import_model, name="import"),
    path("project/<int:project_pk>/factory/", views.add_factory, name="add-factory"),
    path("<int:pk>/", model_page.detail, name="detail"),
    path("<int:pk>/edit/", edit_views.edit, name="edit"),
    path("<int:pk>/delete/", edit_views.delete, name="delete"),
]
