"""Every websocket route, one line per app."""

from webapp.background.routing import websocket_urlpatterns as background
from webapp.jobs.routing import websocket_urlpatterns as jobs

websocket_urlpatterns = [*background, *jobs]
