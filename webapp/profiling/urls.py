from django.urls import path

from webapp.profiling import views

app_name = "profiling"
urlpatterns = [
    path("start/<int:model_pk>/", views.start, name="start"),
    path("<int:pk>/", views.detail, name="detail"),
]
