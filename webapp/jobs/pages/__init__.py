"""The job page's runner parts, apart from how the runner runs: one small class per runner
(`base.RunnerPage`, named by `JobRunner.page`) builds its section's context;
`detail.runner_parts` puts the job's together."""
