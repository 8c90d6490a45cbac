from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from webapp.background.models import Work
from webapp.projects.permissions import visible, visible_projects


def home(request: HttpRequest) -> HttpResponse:
    context = {
        "projects": visible_projects(request.user),
        "recent_work": visible(request.user, Work.objects.select_related("project"))[:10],
    }
    return render(request, "dashboard/home.html", context)
