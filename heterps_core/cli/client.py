"""The HTTP client of `heterps --server URL`: JSON over the server's REST API with a
personal API token, and the server's refusals as one readable line. Standard library only
(urllib): the core must not depend on Django or an HTTP package.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from heterps_core.errors import HeterPSError

TIMEOUT_S = 30.0


class RemoteError(HeterPSError):
    """The server could not be reached or refused the request; says which and why."""


class Client:
    """JSON over HTTP with a personal API token (`Authorization: Token T`)."""

    def __init__(self, server: str, token: str | None) -> None:
        parsed = urllib.parse.urlparse(server)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise RemoteError(f"--server: {server!r} is not an http(s) URL")
        self.base = server.rstrip("/")
        self.token = token

    def get(self, path: str, **query: Any) -> Any:
        params = {k: v for k, v in query.items() if v is not None}
        suffix = f"?{urllib.parse.urlencode(params)}" if params else ""
        return self.request("GET", f"{path}{suffix}")

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.request("POST", path, body or {})

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = f"{self.base}/api/{path.lstrip('/')}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Token {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise RemoteError(_http_problem(exc.code, exc.read(), path)) from None
        except urllib.error.URLError as exc:
            raise RemoteError(f"cannot reach {self.base}: {exc.reason}") from None
        except TimeoutError:
            raise RemoteError(f"{self.base} did not answer within {TIMEOUT_S:g} s") from None
        return json.loads(raw) if raw else None


def _http_problem(code: int, body: bytes, path: str) -> str:
    try:
        detail: Any = json.loads(body)
    except ValueError:
        detail = None
    if code == 401:
        return "the server refused the token (401): check --token"
    if code == 404:
        return f"not found (404): {path} does not exist or you have no access to it"
    if code == 403:
        reason = detail.get("detail") if isinstance(detail, dict) else None
        return f"not allowed (403): {reason or 'your role does not allow this'}"
    if code == 400 and isinstance(detail, dict):
        return "; ".join(f"{field}: {_words(problem)}" for field, problem in detail.items())
    return f"the server answered {code} for {path}"


def _words(problem: Any) -> str:
    if isinstance(problem, list):
        return " ".join(_words(p) for p in problem)
    if isinstance(problem, dict):
        return "; ".join(f"{k}: {_words(v)}" for k, v in problem.items())
    return str(problem)
