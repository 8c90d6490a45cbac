"""What a person gives a runner: each runner's own approve-form fields and API serializer
(`base.OptionsForm`, a DRF `Serializer`), named by the runner (`JobRunner.options_form`,
`JobRunner.options_serializer`). The approve form and serializer keep what every job has and
nest the chosen runner's part as `options`."""
