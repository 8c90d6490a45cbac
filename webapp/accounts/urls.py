from django.urls import path

from webapp.accounts import signup, views

app_name = "accounts"
urlpatterns = [
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", views.revoke, name="revoke-token"),
    path("tokens/<int:pk>/rotate/", views.rotate, name="rotate-token"),
    path("password/", views.PasswordChangeView.as_view(), name="password"),
    path("signup/", signup.signup, name="signup"),
]
