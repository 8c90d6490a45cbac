from django.apps import AppConfig


class CostsConfig(AppConfig):
    name = "webapp.costs"
    label = "costs"
