from django.urls import path

from webapp.jobs import views

app_name = "jobs"
urlpatterns = [
    path("", views.job_list, name="list"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/cancel/", views.cancel, name="cancel"),
    path("<int:pk>/restart/", views.restart, name="restart"),
    path("<int:pk>/replan/", views.replan_measured, name="replan"),
    path("approve/<int:plan_result_id>/", views.approve, name="approve"),
]
