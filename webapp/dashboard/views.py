from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.background.models import Work
from webapp.budgets import services as budgets
from webapp.costs import services as costs
from webapp.dashboard import services
from webapp.projects.permissions import visible, visible_projects


def home(request: HttpRequest) -> HttpResponse:
    period = costs.month(None)
    context = {
        "projects": visible_projects(request.user),
        "recent_work": visible(request.user, Work.objects.select_related("project"))[:10],
        "running_jobs": services.running_jobs(request.user),
        "recent_plans": services.recent_plans(request.user),
        "month": services.month_costs(request.user, period),
        "period": period,
        "budget_alerts": budgets.dashboard(request.user),
    }
    return render(request, "dashboard/home.html", context)
