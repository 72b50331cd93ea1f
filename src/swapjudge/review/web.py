"""The live review server: a Starlette (ASGI) app over a review store.

Routes: `/` (the review page for a reviewer's token, the status page for the owner's), `/status`, `/static/*`
(the page's own script and style, shipped in this package: no CDN), and the JSON API the page uses:
`GET /api/next`, `POST /api/vote`, `POST /api/undo`, `GET /api/status` (owner). Every request needs a valid token
(`Authorization: Bearer TOKEN`, or `?token=` in the URL); without one the answer is 401 and says nothing about
the pairs. A reviewer's token reaches that reviewer's tasks only. A POST from another site is refused (its Origin
or Sec-Fetch-Site), and a POST must be JSON, which a cross-site form cannot send. Every answer carries a strict
Content-Security-Policy; the page writes every text with `textContent`, so no answer's HTML is ever run.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from swapjudge.review.status import JudgeContext, review_status
from swapjudge.review.votes import AlreadyVoted, NoSuchTask, Principal, ReviewStore, live_votes

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src data:; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]
ASSETS = {"review.js": "text/javascript", "review.css": "text/css", "status.js": "text/javascript"}
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]
MAX_BODY = 4096  # a vote is a few dozen bytes
UNAUTHORIZED = {"error": "unauthorized: a valid token is needed (the link you were given carries it)"}


def _asset(name: str) -> str:
    return resources.files("swapjudge.review").joinpath("static", name).read_text(encoding="utf-8")


class SecurityHeaders:
    """Adds the security headers to every answer, the framework's own errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *[(k, v) for k, v in SECURITY_HEADERS if k not in names]]
            await send(message)

        await self.app(scope, receive, with_headers)


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.query_params.get("token") or None


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _unauthorized(page: bool = False) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="swapjudge review"'}
    if page:
        return PlainTextResponse(UNAUTHORIZED["error"] + "\n", status_code=401, headers=headers)
    return JSONResponse(UNAUTHORIZED, status_code=401, headers=headers)


def cross_site_refusal(request: Request) -> str | None:
    """Why a state-changing request is refused as cross-site, or None: the browser's Sec-Fetch-Site must say
    same-origin (or none: typed by the user, or not a browser), and an Origin, when sent, must be this server."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site.lower() not in ("same-origin", "none"):
        return f"cross-site request refused (Sec-Fetch-Site: {site})"
    origin = request.headers.get("origin")
    if origin is not None:
        own = f"{request.url.scheme}://{request.headers.get('host', '')}".lower()
        if origin.lower() != own:
            return "cross-site request refused (its Origin is not this server)"
    return None


@dataclass
class ReviewServer:
    """What the routes share: the store (used from the event loop's thread only), the judge context for the
    status page, and the last status computed (recomputed only when the votes changed)."""

    store: ReviewStore
    judge: JudgeContext | None = None
    _status: tuple[tuple[int, int], dict[str, Any]] | None = field(default=None, repr=False)
    _status_lock: anyio.Lock = field(default_factory=anyio.Lock, repr=False)

    def principal(self, request: Request) -> Principal | None:
        return self.store.principal(_token(request))

    async def status(self) -> dict[str, Any]:
        async with self._status_lock:
            key = self.store.vote_count()
            if self._status is None or self._status[0] != key:
                totals = {name: self.store.progress(name).total for name in self.store.reviewers}
                path, judge = self.store.path, self.judge

                def compute() -> dict[str, Any]:  # statistics off the event loop: votes keep flowing meanwhile
                    return review_status(live_votes(path), totals, judge).to_dict()

                self._status = (key, await anyio.to_thread.run_sync(compute))
            return self._status[1]


Handler = Callable[[Request], Awaitable[Response]]


def create_app(store: ReviewStore, *, judge: JudgeContext | None = None,
               allowed_hosts: list[str] | None = None) -> Starlette:
    """The review app over an open store. `allowed_hosts`: the Host names it answers (default: loopback names
    only, so a page on another site cannot reach it by rebinding a name to 127.0.0.1)."""
    server = ReviewServer(store, judge)

    def page_html(name: str, token: str) -> str:
        return _asset(name).replace("__TOKEN__", token)  # a token is URL-safe base64: nothing to escape

    async def index(request: Request) -> Response:
        who = server.principal(request)
        if who is None:
            return _unauthorized(page=True)
        name = "status.html" if who.role == "owner" else "review.html"
        return Response(page_html(name, _token(request) or ""), media_type="text/html; charset=utf-8")

    async def status_page(request: Request) -> Response:
        who = server.principal(request)
        if who is None:
            return _unauthorized(page=True)
        if who.role != "owner":
            return PlainTextResponse("the status page needs the owner's token\n", status_code=403)
        return Response(page_html("status.html", _token(request) or ""), media_type="text/html; charset=utf-8")

    async def asset(request: Request) -> Response:
        if server.principal(request) is None:
            return _unauthorized()
        name = request.path_params["name"]
        if name not in ASSETS:
            return _error(404, "not found")
        return Response(_asset(name), media_type=f"{ASSETS[name]}; charset=utf-8")

    def reviewer_only(handler: Callable[[Request, Principal], Awaitable[Response]], *, post: bool = False
                      ) -> Handler:
        async def endpoint(request: Request) -> Response:
            if post:
                refusal = cross_site_refusal(request)
                if refusal:
                    return _error(403, refusal)
            who = server.principal(request)
            if who is None:
                return _unauthorized()
            if who.role != "reviewer":
                return _error(403, "this endpoint is for reviewers' tokens")
            if post:
                kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
                if kind != "application/json":
                    return _error(415, "send JSON (Content-Type: application/json)")
            return await handler(request, who)

        return endpoint

    async def body_of(request: Request) -> dict[str, Any] | Response:
        raw = await request.body()
        if len(raw) > MAX_BODY:
            return _error(413, "request too large")
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "the body is not valid JSON")
        if not isinstance(body, dict):
            return _error(400, "the body must be a JSON object")
        return body

    async def next_task(request: Request, who: Principal) -> Response:
        task = store.next_task(who.name)
        if task is None:
            return JSONResponse({"task": None, "progress": store.progress(who.name).to_dict()})
        return JSONResponse(task.to_dict())

    async def vote(request: Request, who: Principal) -> Response:
        body = await body_of(request)
        if isinstance(body, Response):
            return body
        task, choice = body.get("task"), body.get("choice")
        if isinstance(choice, int) and not isinstance(choice, bool):
            choice = str(choice)  # {"choice": 1} as well as {"choice": "1"}
        if not isinstance(task, str) or not task:
            return _error(400, "field `task`: the task id from /api/next is needed")
        if choice not in ("1", "2", "tie", "both_bad"):
            return _error(400, 'field `choice`: must be "1", "2", "tie" or "both_bad"')
        try:
            result = store.vote(who.name, task, str(choice))
        except NoSuchTask:
            return _error(404, "no such task for this reviewer")
        except AlreadyVoted as err:
            return _error(409, str(err))
        return JSONResponse(result.to_dict())

    async def undo(request: Request, who: Principal) -> Response:
        body = await body_of(request)
        if isinstance(body, Response):
            return body
        undone = store.undo(who.name)
        return JSONResponse({"ok": undone is not None, "undone": undone,
                             "progress": store.progress(who.name).to_dict()})

    async def status_json(request: Request) -> Response:
        who = server.principal(request)
        if who is None:
            return _unauthorized()
        if who.role != "owner":
            return _error(403, "the status needs the owner's token")
        return JSONResponse(await server.status())

    async def not_found(request: Request, exc: Exception) -> Response:
        if server.principal(request) is None:
            return _unauthorized()
        return _error(404, "not found")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        if server.principal(request) is None:
            return _unauthorized()
        return _error(405, "method not allowed")

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/status", status_page, methods=["GET"]),
        Route("/static/{name}", asset, methods=["GET"]),
        Route("/api/next", reviewer_only(next_task), methods=["GET"]),
        Route("/api/vote", reviewer_only(vote, post=True), methods=["POST"]),
        Route("/api/undo", reviewer_only(undo, post=True), methods=["POST"]),
        Route("/api/status", status_json, methods=["GET"]),
    ]
    middleware = [Middleware(SecurityHeaders)]
    hosts = LOOPBACK_HOSTS if allowed_hosts is None else allowed_hosts
    if "*" not in hosts:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=hosts, www_redirect=False))
    return Starlette(routes=routes, middleware=middleware,
                     exception_handlers={404: not_found, 405: not_allowed})
