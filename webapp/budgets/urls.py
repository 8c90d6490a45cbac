from django.urls import path

from webapp.budgets import views

app_name = "budgets"

urlpatterns = [
    path("jobs/<int:pk>/", views.job_budget, name="job"),
    path("projects/<int:pk>/", views.project_budget, name="project"),
]
