"""The Starlette application of ``divmeter annotate serve``: server-rendered questionnaires.

Pages (``TOKEN`` is an annotator's token, ``ADMIN`` the database's admin token):

* ``GET /a/TOKEN``: the annotator's current step (warm-up, rating form, or the end);
  ``POST /a/TOKEN/warmup`` and ``POST /a/TOKEN/answer`` store a step in its own transaction and
  redirect back (post/redirect/get), so closing the tab and coming back resumes where one stopped.
* ``GET /admin/ADMIN``: progress of every study, with export links and an invite form;
  ``GET /admin/ADMIN/export/STUDY.csv|jsonl`` and ``/admin/ADMIN/raw/STUDY.jsonl``;
  ``POST /admin/ADMIN/invite/STUDY``.

Refused requests get a 4xx page with a one-line reason and change nothing (see
:class:`divmeter.apps.web.store.RequestError`); unexpected errors get a bare 500 page, never a stack
trace. Bodies above ``max_body`` bytes get 413. Every response carries a strict
Content-Security-Policy (scripts only from ``/static``), ``no-referrer`` and ``no-store``.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
import os
from pathlib import Path
from typing import Any

from divmeter.apps.web.store import KIND_TITLES, RequestError, Store
from divmeter.core._optional import require

__all__ = ["SCALES", "create_app"]

HERE = Path(__file__).resolve().parent

# Tevet & Berant (2021), appendix A: Figure 7 (quality), Figures 8-11 (diversity questions).
SCALES: dict[str, list[tuple[int, str]]] = {
    "quality": [
        (5, "Excellent (very likely response; highly coherent and to the point)"),
        (4, "Good (reasonable response; coherent and related to the context)"),
        (3, "Somewhat (low quality; may include some inconsistencies or grammar mistakes)"),
        (2, "Poor (not related to the context or includes severe grammar mistakes)"),
        (1, "Invalid (no possible connection with the context, or ungrammatical)"),
    ],
    "diversity": [
        (5, "Very diverse (the responses have significant differences from one another)"),
        (4, "Diverse (the responses are considerably different from one another)"),
        (3, "Slightly diverse (the responses tend to be similar but not the same)"),
        (2, "Almost not diverse (the responses are almost the same)"),
        (1, "Not diverse at all (the responses are identical or almost identical)"),
    ],
    "content": [
        (5, "Very diverse (the contents have significant differences from one another)"),
        (4, "Diverse (the contents are considerably different from one another)"),
        (3, "Slightly diverse (the contents tend to be similar but not the same)"),
        (2, "Almost not diverse (the contents are almost the same)"),
        (1, "Not diverse at all (the contents are identical or almost identical)"),
    ],
    "form": [
        (5, "Very diverse (the wording has significant differences from one response to another)"),
        (4, "Diverse (the wording is considerably different from one response to another)"),
        (3, "Slightly diverse (the wording tends to be similar but not the same)"),
        (2, "Almost not diverse (the wording is almost the same)"),
        (1, "Not diverse at all (the wording is identical or almost identical)"),
    ],
    "similarity": [
        (5, "Very similar (the responses are the same or almost the same)"),
        (4, "Similar (the responses are quite similar)"),
        (3, "Slightly similar (the responses are a bit similar but not the same)"),
        (2, "Almost not similar (the responses are considerably different from one another)"),
        (1, "Not similar at all (the responses are completely not related)"),
    ],
    "ranking": [
        (5, "Set A is much more diverse"),
        (4, "Set A is somewhat more diverse"),
        (3, "The diversity of both sets is similar"),
        (2, "Set B is somewhat more diverse"),
        (1, "Set B is much more diverse"),
    ],
    # the commonsense paper's five-point scale (its Figure 8 scoring guidelines)
    "cs": [
        (5, "Explores a wide range of aspects of the theme, negligible redundancy"),
        (4, "Covers different aspects of the theme, minor lexical/semantic overlap"),
        (3, "Some diversity but noticeable redundancy"),
        (2, "Mostly repetitive, limited exploration of the theme"),
        (1, "Highly redundant, almost no diversity"),
    ],
}

_SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; "
                                 b"img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
                                 b"base-uri 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


class _Limits:
    """Pure ASGI middleware: body size limit (413) and security headers on every response."""

    def __init__(self, app: Any, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secure(message: Any) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    h for h in _SECURITY_HEADERS if h[0] not in names]
            await send(message)

        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and not length.isdigit():
            await _plain(send_secure, 400, "malformed Content-Length header.")
            return
        if length is not None and int(length) > self.max_body:
            await _plain(send_secure, 413, f"request body too large; the limit is "
                                           f"{self.max_body} bytes.")
            return
        # Read the whole body first (it is small by construction), refusing it past the limit
        # before the application sees a byte; then replay it.
        body = b""
        more = scope["method"] not in ("GET", "HEAD")
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # client went away
            body += message.get("body", b"")
            if len(body) > self.max_body:
                await _plain(send_secure, 413, f"request body too large; the limit is "
                                               f"{self.max_body} bytes.")
                return
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send_secure)


async def _plain(send: Any, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _admin_csrf(admin: str) -> str:
    return hmac.new(admin.encode(), b"divmeter-admin-csrf", hashlib.sha256).hexdigest()


def create_app(db: str | os.PathLike[str], *, lease: float = 3600.0,
               max_body: int = 64 * 1024, base_url: str = "http://127.0.0.1:8000") -> Any:
    """Build the ASGI application serving one study database.

    Args:
        db: The study database (``divmeter annotate init``).
        lease: Seconds an assigned item stays reserved for its annotator.
        max_body: Largest accepted request body in bytes (413 above).
        base_url: Where annotators reach the server: the invite links the admin page makes
            start with it (never with a request's ``Host`` header, which anyone can forge).

    Returns:
        A Starlette application wrapped in the size-limit / security-header middleware.

    Raises:
        MissingDependencyError: ``divmeter[web]`` is not installed.
        InvalidInputError: ``db`` is not a study database.
    """
    require("starlette", extra="web")
    require("jinja2", extra="web")
    require("multipart", extra="web", package="python-multipart")
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles
    from starlette.templating import Jinja2Templates

    store = Store(db, lease=lease)
    admin_token = store.admin_token()
    admin_csrf = _admin_csrf(admin_token)
    templates = Jinja2Templates(directory=str(HERE / "templates"))

    def page(request: Request, name: str, http_status: int = 200, **ctx: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, name, ctx, status_code=http_status)

    async def form_dict(request: Request) -> dict[str, str]:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype not in ("application/x-www-form-urlencoded", "multipart/form-data"):
            raise RequestError(415, f"expected a form submission; got content type "
                                    f"{ctype or 'none'!r}.")
        form = await request.form(max_files=0, max_fields=64, max_part_size=16 * 1024)
        out: dict[str, str] = {}
        for key in form.keys():
            values = form.getlist(key)
            if len(values) != 1 or not isinstance(values[0], str):
                raise RequestError(422, f"field {key!r} must appear once, as text.")
            out[key] = values[0]
        return out

    def check_admin(token: str) -> None:
        if not hmac.compare_digest(token.encode(), admin_token.encode()):
            raise RequestError(404, "unknown admin link.")

    async def index(request: Request) -> Response:
        return page(request, "index.html")

    async def annotator(request: Request) -> Response:
        token = request.path_params["token"]
        step = await run_in_threadpool(store.next_step, token)
        ctx = {"step": step, "token": token, "scales": SCALES, "title": KIND_TITLES[step.kind]}
        if step.stage == "done":
            return page(request, "done.html", **ctx)
        return page(request, f"{step.stage}.html", **ctx)

    async def warmup(request: Request) -> Response:
        token = request.path_params["token"]
        fields = await form_dict(request)
        await run_in_threadpool(store.save_warmup, token, fields)
        return RedirectResponse(f"/a/{token}", status_code=303)

    async def answer(request: Request) -> Response:
        token = request.path_params["token"]
        fields = await form_dict(request)
        await run_in_threadpool(store.save_answer, token, fields)
        return RedirectResponse(f"/a/{token}?saved=1", status_code=303)

    async def admin(request: Request) -> Response:
        check_admin(request.path_params["admin"])
        status = await run_in_threadpool(store.status)
        return page(request, "admin.html", status=status, admin=request.path_params["admin"],
                    csrf=admin_csrf)

    async def export(request: Request, what: str = "export") -> Response:
        check_admin(request.path_params["admin"])
        study, fmt = request.path_params["study"], request.path_params["fmt"]
        try:
            rows = await run_in_threadpool(store.raw if what == "raw" else store.export, study)
        except Exception as exc:  # unknown study name
            raise RequestError(404, str(exc)) from None
        if fmt == "jsonl":
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            media = "application/x-ndjson"
        elif fmt == "csv":
            buf = io.StringIO()
            cols: list[str] = []
            for r in rows:
                cols += [k for k in r if k not in cols]
            w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
            text, media = buf.getvalue(), "text/csv"
        else:
            raise RequestError(404, f"export format must be csv or jsonl; got {fmt!r}.")
        return Response(text, media_type=media, headers={
            "content-disposition": f'attachment; filename="{what}-{study}.{fmt}"'})

    async def raw(request: Request) -> Response:
        return await export(request, "raw")

    async def invite(request: Request) -> Response:
        check_admin(request.path_params["admin"])
        fields = await form_dict(request)
        if not hmac.compare_digest(fields.get("csrf", "").encode(), admin_csrf.encode()):
            raise RequestError(403, "missing or wrong CSRF token; reload the admin page.")
        n = fields.get("n", "")
        if not n.isdigit() or not 1 <= int(n) <= 500:
            raise RequestError(422, f"field 'n' must be a number of annotators from 1 to 500; "
                                    f"got {n!r}.")
        study = request.path_params["study"]
        try:
            tokens = await run_in_threadpool(store.invite, study, int(n))
        except Exception as exc:
            raise RequestError(404, str(exc)) from None
        base = base_url.rstrip("/")  # the configured address, not the request's Host header
        return page(request, "invited.html", study=study, links=[f"{base}/a/{t}" for t in tokens],
                    admin=request.path_params["admin"])

    async def refused(request: Request, exc: Exception) -> Response:
        if isinstance(exc, RequestError):
            status, message = exc.status, str(exc)
        elif isinstance(exc, HTTPException):
            status, message = exc.status_code, str(exc.detail)
        else:
            status, message = 500, "internal error"
        token = request.path_params.get("token") if request.path_params else None
        return page(request, "error.html", http_status=status, message=message, code=status,
                    token=token)

    async def crashed(request: Request, exc: Exception) -> Response:
        return HTMLResponse("<!doctype html><title>500</title><p>Internal error; the answer was "
                            "not stored. Go back and try again.</p>", status_code=500)

    routes = [
        Route("/", index),
        Route("/a/{token}", annotator),
        Route("/a/{token}/warmup", warmup, methods=["POST"]),
        Route("/a/{token}/answer", answer, methods=["POST"]),
        Route("/admin/{admin}", admin),
        Route("/admin/{admin}/export/{study}.{fmt}", export),
        Route("/admin/{admin}/raw/{study}.{fmt}", raw),
        Route("/admin/{admin}/invite/{study}", invite, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(
        debug=False, routes=routes,
        exception_handlers={RequestError: refused, HTTPException: refused, 500: crashed,
                            Exception: crashed},
    )
    return _Limits(app, max_body)
