from django.apps import AppConfig


class BudgetsConfig(AppConfig):
    name = "webapp.budgets"
    label = "budgets"
