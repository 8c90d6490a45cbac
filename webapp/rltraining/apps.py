from django.apps import AppConfig


class RLTrainingConfig(AppConfig):
    name = "webapp.rltraining"
    label = "rltraining"
    verbose_name = "RL training"

    def ready(self) -> None:
        from webapp.rltraining import train_kind  # noqa: F401  registers its work kind
