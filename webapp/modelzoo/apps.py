from django.apps import AppConfig


class ModelZooConfig(AppConfig):
    name = "webapp.modelzoo"
    label = "modelzoo"
    verbose_name = "Models"
