"""The HeterPS web application: Django project settings, ASGI entry point and apps."""
