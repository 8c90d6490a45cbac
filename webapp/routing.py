"""Every websocket route, one line per app."""

from webapp.background.routing import websocket_urlpatterns as background

websocket_urlpatterns = [*background]
