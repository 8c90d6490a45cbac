"""Budgets (issue 26.4): a job's and a project's dollar budget, enforced by the runner (a
run about to pass one is drained to a checkpoint and stopped, with the reason) and
announced at 80% and 100% (mail and a dashboard line). Docs: docs/jobs.md, "Budgets"."""
