from django.urls import path

from webapp.jobs.consumers import JobConsumer

websocket_urlpatterns = [
    path("ws/jobs/work/<int:work_id>/", JobConsumer.as_asgi()),
]
