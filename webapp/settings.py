"""Django settings. The environment picks the mode (see `webapp.environment`).

No variables: the embedded default. `DATABASE_URL` / `REDIS_URL`: production services.
`SECRET_KEY`, `DEBUG`, `ALLOWED_HOSTS`, `HETERPS_SECURE` tune the rest.
"""

from __future__ import annotations

import os
from pathlib import Path

from webapp import environment

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("HETERPS_VAR_DIR", BASE_DIR / "var"))

MODE = environment.mode(os.environ)
SECRET_KEY = environment.secret_key(os.environ, VAR_DIR)
DEBUG = environment.flag(os.environ, "DEBUG", default=False)
ALLOWED_HOSTS = environment.allowed_hosts(os.environ)
# Loading code into the server is the operator's decision, never a side effect of a text
# field: users may import only these installed `package.module:factory` names as models
# (comma-separated in HETERPS_MODEL_FACTORIES; see docs/web-planning.md).
MODEL_FACTORIES = tuple(
    f.strip() for f in os.environ.get(
        "HETERPS_MODEL_FACTORIES", "heterps_core.zoo.examples.tabular:tabular_ctr"
    ).split(",") if f.strip()
)
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]
# Reverse proxies whose X-Forwarded-For names the client (comma-separated addresses or
# networks); none by default, so a client cannot pick its own address (docs/accounts.md).
HETERPS_TRUSTED_PROXY = tuple(
    p.strip() for p in os.environ.get("HETERPS_TRUSTED_PROXY", "").split(",") if p.strip()
)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI from our own static files, no CDN
    "webapp.accounts",
    "webapp.projects",
    "webapp.background",
    "webapp.catalogue",
    "webapp.health",
    "webapp.dashboard",
    "webapp.ops",
    "webapp.modelzoo",
    "webapp.profiling",
    "webapp.planning",
    "webapp.rltraining",
    "webapp.jobs",
    "webapp.budgets",
    "webapp.costs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "webapp.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "webapp.background.middleware.BrokerUnavailableMiddleware",
]

ROOT_URLCONF = "webapp.urls"
ASGI_APPLICATION = "webapp.asgi.application"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webapp.accounts.signup.signup_open",  # the "Sign up" link
            ],
        },
    },
]

DATABASES = environment.databases(os.environ, VAR_DIR)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
CHANNEL_LAYERS = environment.channel_layers(os.environ)
globals().update(environment.celery_settings(os.environ))
# Named one by one (not globals().update) so that type checkers see the settings.
_TIMING = environment.work_timing(os.environ)
WORK_LEASE_S = _TIMING["WORK_LEASE_S"]
WORK_HEARTBEAT_S = _TIMING["WORK_HEARTBEAT_S"]
WORK_SWEEP_S = _TIMING["WORK_SWEEP_S"]
WORK_REQUEUE_S = _TIMING["WORK_REQUEUE_S"]
# Attempts of a kind that may start over (WorkKind.retryable) before a lost worker fails it.
WORK_MAX_ATTEMPTS = 2

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Mail (project invitations): SMTP with the EMAIL_* variables when EMAIL_HOST is set,
# else printed on the server's console (the embedded default).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = environment.flag(os.environ, "EMAIL_USE_TLS", default=False)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "heterps@localhost")
INVITATION_DAYS = int(os.environ.get("HETERPS_INVITATION_DAYS", "7"))  # links expire after
INVITATIONS_PER_DAY = int(os.environ.get("HETERPS_INVITATIONS_PER_DAY", "50"))  # per owner
SIGNUP_OPEN = environment.flag(os.environ, "HETERPS_SIGNUP", default=False)  # self sign-up
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"  # filled by `collectstatic` in the Docker image
# Serve straight from static/ when collectstatic has not run (the embedded default).
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns on every start when it is missing
# Hashed, compressed, long-cached copies once collectstatic ran (see webapp/staticstorage.py).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "webapp.staticstorage.StaticStorage"},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: an anonymous caller then gets 401 with WWW-Authenticate, not 403.
        "webapp.accounts.authentication.ApiTokenAuthentication",  # named, expiring tokens
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # Error answers documented once for every operation (webapp/api_schema.py).
    "DEFAULT_SCHEMA_CLASS": "webapp.api_schema.ApiAutoSchema",
    # Services' and the core's errors are 400s naming the field (webapp/api_errors.py).
    "EXCEPTION_HANDLER": "webapp.api_errors.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "HeterPS API",
    "DESCRIPTION": "Plan and run deep-learning training on heterogeneous clusters.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The documented body is JSON. Form bodies still parse (scripts sign in with
    # `curl -d username=...`), but a form cannot say null or a number's type, so they are
    # not offered as an equal way in.
    "PARSER_WHITELIST": ["rest_framework.parsers.JSONParser"],
    # A body's component apart from the answer's (`ProjectRequest`, `Project`): what a
    # request must hold (a name not blank) is not what an answer may hold.
    "COMPONENT_SPLIT_REQUEST": True,
}

# HTTPS hardening: on by default in production mode (behind TLS), off for local http.
SECURE = environment.flag(os.environ, "HETERPS_SECURE", default=MODE.database == "postgresql")
SESSION_COOKIE_SECURE = SECURE
CSRF_COOKIE_SECURE = SECURE
SECURE_SSL_REDIRECT = SECURE
SECURE_HSTS_SECONDS = 31_536_000 if SECURE else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE
SECURE_HSTS_PRELOAD = SECURE
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain http

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
