from django.contrib import admin

from webapp.accounts.forms import ThrottledAdminAuthenticationForm
from webapp.accounts.models import ApiToken, FailedLogin

# /admin/login/ is a second sign-in page: throttled like the first (issue 25 item 2).
admin.site.login_form = ThrottledAdminAuthenticationForm


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "expires_at", "last_used_at",
                    "revoked_at"]
    list_filter = ["revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    readonly_fields = ["key_hash", "prefix", "created_at", "last_used_at"]

    def has_add_permission(self, request: object, obj: object = None) -> bool:
        return False  # keys are made by their owner, who sees them once


@admin.register(FailedLogin)
class FailedLoginAdmin(admin.ModelAdmin):
    list_display = ["at", "username", "address"]
    search_fields = ["username", "address"]
