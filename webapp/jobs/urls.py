from django.urls import path

from webapp.jobs import compare, exports, log_view, views

app_name = "jobs"
urlpatterns = [
    path("", views.job_list, name="list"),
    path("compare/", compare.compare, name="compare"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/cancel/", views.cancel, name="cancel"),
    path("<int:pk>/restart/", views.restart, name="restart"),
    path("<int:pk>/replan/", views.replan_measured, name="replan"),
    path("<int:pk>/log/", log_view.job_log, name="log"),
    path("<int:pk>/metrics.csv", exports.metrics_csv, name="metrics-csv"),
    path("approve/<int:plan_result_id>/", views.approve, name="approve"),
]
