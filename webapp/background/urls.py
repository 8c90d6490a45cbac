from django.urls import path

from webapp.background import views

app_name = "background"
urlpatterns = [
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/cancel/", views.cancel, name="cancel"),
    path("start/evaluate/<int:project_pk>/", views.start_evaluate, name="start-evaluate"),
]
