from django.apps import AppConfig


class RLTrainingConfig(AppConfig):
    name = "webapp.rltraining"
    label = "rltraining"
    verbose_name = "RL training"
