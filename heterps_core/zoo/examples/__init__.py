"""Example model factories: plain `torch.nn.Module`s, as a user's own package would hold them.

The web app's default allow-list (`HETERPS_MODEL_FACTORIES`) names `tabular:tabular_ctr`, so a
fresh install can import, profile, plan and run a model that is not in the zoo. See
docs/web-planning.md, "Bringing your own model".
"""
