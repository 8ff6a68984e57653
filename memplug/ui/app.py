"""The viewer's web app: pages over :class:`~memplug.memory.Memory`, as the CLI reads it.

Every request opens the database for itself (read-only unless it changes something), so
two viewers, the hooks and the CLI share the file as they always do. Every page passes
through the same secret redaction as every other exit to a model (``redacted``). Every
request must come to the bound address (a ``Host`` that names another one is refused:
DNS rebinding) with the run's token, in the URL the server printed or in the cookie the
first page set; every change is a POST with the run's CSRF token.
"""

from __future__ import annotations

import hmac
import secrets
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from msgspec import Struct
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from memplug.base.errors import MemplugError
from memplug.base.redaction import redact_tree
from memplug.memory import Memory

HERE = Path(__file__).resolve().parent
COOKIE = "memplug_ui"
# Events shown per page of a session's timeline, and characters per expanded chunk.
TIMELINE_PAGE = 200
CHUNK_CHARS = 4_000
# The search filters that take several values.
LISTS = ("role", "type", "tool")


class Settings(Struct, frozen=True):
    """One run of the viewer."""

    db_path: str | None
    config_path: str | None
    host: str
    port: int
    token: str
    csrf: str
    read_only: bool = False

    @classmethod
    def new(cls, db_path: str | None, config_path: str | None, port: int, *,
            read_only: bool = False) -> Settings:  # fmt: skip
        return cls(db_path, config_path, "127.0.0.1", port, secrets.token_urlsafe(24),
                   secrets.token_urlsafe(24), read_only)  # fmt: skip

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/?token={self.token}"


def build_app(settings: Settings) -> Starlette:
    """The app for one run: its routes, templates and guard."""
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    pages = Pages(settings, templates)
    routes = [
        Route("/", pages.home),
        Route("/session/{session_id:path}", pages.session),
        Route("/event", pages.event_chunk),
        Route("/items", pages.items),
        Route("/item/{memory_id}", pages.item),
        Route("/item/{memory_id}/{action}", pages.change, methods=["POST"]),
        Route("/core", pages.core),
        Route("/injections", pages.injections),
        Route("/injection/{assembly_id:int}", pages.injection),
        Route("/search", pages.search),
        Route("/purge", pages.purge_confirm),
        Route("/purge", pages.purge, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    app = Starlette(routes=routes)
    app.add_middleware(Guard, settings=settings)
    return app


class Guard:
    """Refuses what does not come from this run's page: a foreign ``Host`` (DNS
    rebinding), a missing or wrong token; sets the token cookie on the first page."""

    def __init__(self, app: Any, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.hosts = {f"{settings.host}:{settings.port}", f"localhost:{settings.port}"}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is not None:
            await HTMLResponse(refusal, status_code=403)(scope, receive, send)
            return
        if request.query_params.get("token"):
            # The token leaves the URL once it is in a cookie only this address reads.
            target = request.url.remove_query_params("token")
            response = RedirectResponse(str(target.path) + (f"?{target.query}" if target.query
                                                             else ""), status_code=303)  # fmt: skip
            response.set_cookie(COOKIE, self.settings.token, httponly=True, samesite="strict")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, request: Request) -> str | None:
        if request.headers.get("host", "") not in self.hosts:
            return "Refused: this viewer answers only at the address it printed."
        given = request.query_params.get("token") or request.cookies.get(COOKIE) or ""
        if not hmac.compare_digest(given, self.settings.token):
            return "Refused: open the URL `memory ui` printed (it carries this run's token)."
        return None


Handler = Callable[[Request], Awaitable[Response]]


class Pages:
    """One method per page; each reads through ``Memory`` and renders one template."""

    def __init__(self, settings: Settings, templates: Jinja2Templates) -> None:
        self.settings = settings
        self.templates = templates

    def _open(self, *, write: bool = False) -> Memory:
        return Memory.open(self.settings.db_path, config_path=self.settings.config_path,
                           create=False, readonly=not write)  # fmt: skip

    def _page(self, request: Request, name: str, status: int = 200, **data: Any) -> Response:
        context = {"csrf": self.settings.csrf, "read_only": self.settings.read_only,
                   "request": request, **redact_tree(data)}  # fmt: skip
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def _error(self, request: Request, error: Exception, status: int = 400) -> Response:
        return self._page(request, "error.html", status, message=str(error))

    async def home(self, request: Request) -> Response:
        with self._open() as memory:
            sessions = memory.sessions()
        projects: dict[str, dict[str, Any]] = {}
        for session in sessions:
            key = session["project"] or session["cwd"] or "(no project)"
            entry = projects.setdefault(key, {"project": key, "sessions": [], "events": 0,
                                              "last": ""})  # fmt: skip
            entry["sessions"].append(session)
            entry["events"] += session["events"] or 0
            entry["last"] = max(entry["last"], session["last_time"] or "")
        ordered = sorted(projects.values(), key=lambda p: p["last"], reverse=True)
        return self._page(request, "home.html", projects=ordered)

    async def session(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        after = int(request.query_params.get("after", "-1"))
        with self._open() as memory:
            memory.require_sessions([session_id])
            events = memory.session_events(session_id, after_seq=after)[: TIMELINE_PAGE + 1]
            rows = [_event_row(memory, e) for e in events[:TIMELINE_PAGE]]
            logs = memory.assembly_summaries(session_id, limit=20)
        more = rows[-1]["seq"] if len(events) > TIMELINE_PAGE else None
        return self._page(request, "session.html", session_id=session_id, events=rows,
                          more=more, injections=logs)  # fmt: skip

    async def event_chunk(self, request: Request) -> Response:
        """One chunk of an event's full text (htmx swaps it in place)."""
        target = request.query_params.get("ref") or request.query_params.get("next") or ""
        with self._open() as memory:
            data = memory.expand(target, max_chars=CHUNK_CHARS)
        return self._page(request, "chunk.html", data=data)

    async def items(self, request: Request) -> Response:
        params = request.query_params
        with self._open() as memory:
            data = memory.items(project=params.get("project") or None,
                                status=params.get("status") or None,
                                kind=params.get("kind") or None,
                                scope=None if params.get("project") else "global")  # fmt: skip
        needle = (params.get("q") or "").casefold()
        found = [i for i in data["items"] if needle in i["content"].casefold()]
        return self._page(request, "items.html", items=found, scope=data["scope"],
                          q=params.get("q", ""), project=params.get("project", ""))  # fmt: skip

    async def item(self, request: Request) -> Response:
        with self._open() as memory:
            try:
                data = memory.extractor.inspect(request.path_params["memory_id"])
            except MemplugError as error:
                return self._error(request, error, 404)
        return self._page(request, "item.html", item=data)

    async def change(self, request: Request) -> Response:
        """Retract, promote or correct an item (a POST with the CSRF token)."""
        form = await request.form()
        refusal = self._write_refusal(str(form.get("csrf", "")))
        if refusal:
            return self._page(request, "error.html", 403, message=refusal)
        memory_id, action = request.path_params["memory_id"], request.path_params["action"]
        try:
            with self._open(write=True) as memory:
                memory_id = _apply_change(memory, memory_id, action, form)
        except MemplugError as error:
            return self._error(request, error)
        return RedirectResponse(f"/item/{memory_id}", status_code=303)

    def _write_refusal(self, csrf: str) -> str | None:
        if self.settings.read_only:
            return "Refused: this viewer runs --read-only."
        if not hmac.compare_digest(csrf, self.settings.csrf):
            return "Refused: the form's CSRF token is missing or wrong; reload the page."
        return None

    async def core(self, request: Request) -> Response:
        project = request.query_params.get("project") or None
        with self._open() as memory:
            try:
                data = memory.core(project)
            except MemplugError as error:
                return self._error(request, error, 404)
        return self._page(request, "core.html", core=data)

    async def injections(self, request: Request) -> Response:
        session = request.query_params.get("session") or None
        with self._open() as memory:
            logs = memory.assembly_summaries(session, limit=100)
        return self._page(request, "injections.html", logs=logs, session=session or "")

    async def injection(self, request: Request) -> Response:
        from memplug.reports.explain import explain, find_assembly

        with self._open() as memory:
            try:
                record = find_assembly(memory.store, assembly_id=request.path_params["assembly_id"])
            except MemplugError as error:
                return self._error(request, error, 404)
            data = explain(record)
        return self._page(request, "injection.html", data=data)

    async def search(self, request: Request) -> Response:
        params = request.query_params
        query, token = params.get("q") or None, params.get("next") or None
        # The CLI's filters: scope, since and until as given; role, type and tool lists
        # (comma-separated in one field, or the field repeated).
        filters: dict[str, str] = {n: params.get(n) or "" for n in ("scope", "since", "until")}
        for name in ("role", "type", "tool"):
            filters[name] = ",".join(v for value in params.getlist(name) for v in value.split(",")
                                     if v.strip())  # fmt: skip
        options: dict[str, Any] = {k: v for k, v in filters.items() if v and k not in LISTS}
        options.update((k, filters[k].split(",")) for k in LISTS if filters[k])
        data: dict[str, Any] | None = None
        if query or token:
            with self._open() as memory:
                try:
                    data = memory.search(query, next_token=token, limit=20, **options)
                except MemplugError as error:
                    return self._error(request, error)
        return self._page(request, "search.html", q=query or "", data=data, filters=filters)

    async def purge_confirm(self, request: Request) -> Response:
        from memplug.reports.purge import plan_purge

        session = request.query_params.get("session")
        project = request.query_params.get("project")
        with self._open() as memory:
            sessions = [session] if session else [
                s["session_id"] for s in memory.sessions() if project and
                (s["project"] or s["cwd"]) == project]  # fmt: skip
            if not sessions:
                return self._page(request, "error.html", 400, message="nothing to purge")
            plan = plan_purge(memory, sessions=sessions).as_dict()
        return self._page(request, "purge.html", sessions=sessions, plan=plan)

    async def purge(self, request: Request) -> Response:
        from memplug.reports.purge import purge

        form = await request.form()
        refusal = self._write_refusal(str(form.get("csrf", "")))
        if refusal:
            return self._page(request, "error.html", 403, message=refusal)
        sessions = [s for s in str(form.get("sessions", "")).split("\n") if s]
        with self._open(write=True) as memory:
            report = purge(memory, sessions=sessions).as_dict()
        return self._page(request, "purged.html", report=report)


def _event_row(memory: Memory, event: Any) -> dict[str, Any]:
    text = " ".join((event.text or "").split())
    return {
        "ref": event.ref, "seq": event.seq, "type": event.type, "role": event.role,
        "time": event.event_time, "tool": event.tool_name, "outcome": event.outcome,
        "generated": bool(event.generated), "compaction": event.type.startswith("compaction/"),
        "preview": text[:240], "long": len(text) > 240 or bool(event.truncated),
    }  # fmt: skip


def _apply_change(memory: Memory, memory_id: str, action: str, form: Any) -> str:
    """The item page to go back to after ``action``."""
    if action == "retract":
        memory.extractor.retract(memory_id, actor="ui", note=str(form.get("note") or "") or None)
    elif action == "promote":
        memory.extractor.promote(memory_id, kind=str(form.get("kind") or "decision"), actor="ui")
    elif action == "correct":
        made = memory.correct(memory_id, str(form.get("text") or ""), actor="ui")
        if made["item"] is not None:
            return str(made["item"]["id"])
    else:
        raise MemplugError(f"unknown change {action!r} (retract, promote or correct)")
    return memory_id


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def serve(settings: Settings) -> None:
    """Serve until Ctrl-C; uvicorn stops cleanly on SIGINT and SIGTERM."""
    import uvicorn

    uvicorn.run(build_app(settings), host=settings.host, port=settings.port,
                log_level="warning", access_log=False)  # fmt: skip
