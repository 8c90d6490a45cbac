from django.urls import path

from webapp.background.consumers import WorkConsumer

websocket_urlpatterns = [
    path("ws/work/<int:work_id>/", WorkConsumer.as_asgi()),
]
