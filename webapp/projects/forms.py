from django import forms

from webapp.projects.models import Project, Role


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ["name", "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}


class InviteForm(forms.Form):
    who = forms.CharField(max_length=254, label="Username or e-mail address",
                          help_text="An account's username, or an address to mail the link to")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
