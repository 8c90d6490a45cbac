from django.urls import path

from webapp.costs import views

app_name = "costs"
urlpatterns = [
    path("", views.report, name="report"),
    path("export.csv", views.export, name="export"),
]
