"""REST API for personal tokens: `POST /api/token/` signs in with a password and answers
200 with a named, expiring token (signing in again with the same name rotates that
token); `/api/tokens/` lists, makes, rotates and revokes your own."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import authenticate
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from webapp.accounts import services, throttle
from webapp.accounts.authentication import TooManyFailures
from webapp.accounts.models import ApiToken


class TokenSerializer(serializers.ModelSerializer):
    state = serializers.CharField(read_only=True)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "state", "created_at", "expires_at", "last_used_at",
                  "revoked_at"]
        read_only_fields = fields


class NewTokenSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=80, default="api")
    days = serializers.IntegerField(min_value=1, max_value=services.MAX_DAYS,
                                    default=services.DEFAULT_DAYS)


class SignInSerializer(NewTokenSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class IssuedTokenSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="the key: shown this once")
    authorization = serializers.CharField(
        read_only=True, help_text="the Authorization header to send: `Token <key>`")

    class Meta(TokenSerializer.Meta):
        fields = ["token", "authorization", *TokenSerializer.Meta.fields]
        read_only_fields = fields


def _issued(token: ApiToken, key: str, code: int = status.HTTP_201_CREATED) -> Response:
    data = TokenSerializer(token).data | {"token": key, "authorization": f"Token {key}"}
    return Response(data, status=code)


class ObtainTokenView(APIView):
    """Sign in with username and password; answers 200 and a token named `name` (the
    user's active token of that name, if any, is revoked: a rotation). Failures slow the
    caller's address down (webapp.accounts.throttle): too many answer 429 with the wait."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    sign_in_throttled = True  # the schema documents the 429 (webapp/api_schema.py)

    # 200, as documented since the endpoint existed (docs/accounts.md, version note).
    @extend_schema(request=SignInSerializer, responses={200: IssuedTokenSerializer})
    def post(self, request: Request) -> Response:
        body = SignInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        address = throttle.client_address(request.META)
        try:
            throttle.guard(data["username"], address)
        except throttle.Throttled as exc:
            raise TooManyFailures(exc) from None
        user = authenticate(request, username=data["username"], password=data["password"])
        if user is None:
            throttle.record_failure(data["username"], address)
            raise exceptions.ValidationError(
                {"password": ["Unable to sign in with this username and password."]})
        throttle.record_success(data["username"], address)
        token, key = services.sign_in_token(user, data["name"], data["days"])
        return _issued(token, key, status.HTTP_200_OK)


class TokenViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Your own tokens. DELETE revokes one; rotate revokes it and answers a new key."""

    serializer_class = TokenSerializer

    def get_queryset(self) -> QuerySet[ApiToken]:
        return ApiToken.objects.filter(user_id=self.request.user.pk)

    def get_object(self) -> ApiToken:
        return services.own_token(self.request.user, self.kwargs.get("pk"))

    @extend_schema(request=NewTokenSerializer, responses={201: IssuedTokenSerializer})
    def create(self, request: Request) -> Response:
        body = NewTokenSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        token, key = services.create_token(request.user, body.validated_data["name"],
                                           body.validated_data["days"])
        return _issued(token, key)

    @extend_schema(request=None, responses={204: None})
    def destroy(self, request: Request, pk: str | None = None) -> Response:
        services.revoke_token(request.user, pk)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={201: IssuedTokenSerializer})
    @action(detail=True, methods=["post"])
    def rotate(self, request: Request, pk: str | None = None) -> Response:
        token, key = services.rotate_token(request.user, pk)
        return _issued(token, key)
