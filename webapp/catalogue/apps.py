from django.apps import AppConfig


class CatalogueConfig(AppConfig):
    name = "webapp.catalogue"
    label = "catalogue"
    verbose_name = "Resource catalogue"
