"""The ASGI entry point: Django for HTTP, Channels consumers for websockets.

Websockets need a logged-in session (AuthMiddlewareStack) and an Origin among
ALLOWED_HOSTS, so another site cannot open one with the user's cookie.
"""

from __future__ import annotations

import logging
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

from django.core.asgi import get_asgi_application

django_http = get_asgi_application()  # sets Django up before the consumers import models

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from webapp.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_http,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)

logging.getLogger("heterps").info("%s", settings.MODE.describe())
