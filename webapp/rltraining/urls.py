from django.urls import path

from webapp.rltraining import views

app_name = "rltraining"
urlpatterns = [
    path("start/<int:request_pk>/", views.start, name="start"),
    path("<int:pk>/", views.detail, name="detail"),
    path("<int:pk>/approve/", views.approve, name="approve"),
]
