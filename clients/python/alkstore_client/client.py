"""The HTTP client: transport, errors, and the calls that are not plain JSON
(the notification stream)."""

import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections import namedtuple

from ._generated import GeneratedClient, _seg

__all__ = ["ApiError", "Client", "Listener", "Notification"]


class ApiError(Exception):
    """An error answer of the server: `{"error": {"code", "field", "message"}}`.

    `status` is the HTTP status, `code` a stable snake_case name
    (`invalid_input`, `not_found`, `not_held`, ...), `field` the
    request field at fault (or None), `message` a sentence; for an atomic
    request also `op_index` and `op`, the op that failed."""

    def __init__(self, status, code=None, message="", field=None, op_index=None, op=None):
        self.status = status
        self.code = code
        self.field = field
        self.message = message
        self.op_index = op_index
        self.op = op
        where = f" ({field})" if field else ""
        super().__init__(f"{status} {code}{where}: {message}")

    @classmethod
    def from_body(cls, status, raw):
        try:
            err = json.loads(raw).get("error") or {}
        except (ValueError, AttributeError):
            text = raw.decode("utf-8", "replace").strip() if isinstance(raw, bytes) else str(raw)
            return cls(status, None, text or f"HTTP {status}")
        return cls(status, err.get("code"), err.get("message", ""), err.get("field"),
                   err.get("op_index"), err.get("op"))


Notification = namedtuple("Notification", "channel event payload")
Notification.__doc__ = """One message of a channel's stream: `event` is the SSE event name
(`notification`), `payload` the text sent with `notify`."""


class Client(GeneratedClient):
    """A client of `alk serve`: every operation of the API as a method named
    after its operationId (path values positional, query and body fields as
    keyword arguments; None leaves an optional field out), plus `listen` and
    `result`.

        client = Client("http://127.0.0.1:7878", token="...")
        client.enqueue("emails", payload={"to": "a@example.com"})

    A 4xx/5xx answer raises `ApiError`. Long polls (`wait_ms`) get that much
    more time than `timeout` (seconds) before the connection gives up."""

    def __init__(self, url="http://127.0.0.1:7878", token=None, timeout=30.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def __repr__(self):
        return f"Client({self.url!r})"

    def _build(self, method, path, query=None, body=None, accept="application/json"):
        url = self.url + path
        if query:
            items = [(k, _query_value(v)) for k, v in query.items() if v is not None]
            if items:
                url += "?" + urllib.parse.urlencode(items, quote_via=urllib.parse.quote)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", accept)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        return req

    def _request(self, method, path, query=None, body=None):
        wait_ms = (query or {}).get("wait_ms") or (body or {}).get("wait_ms") or 0
        req = self._build(method, path, query, body)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout + wait_ms / 1000) as res:
                raw = res.read()
        except urllib.error.HTTPError as e:
            with e:
                raise ApiError.from_body(e.code, e.read()) from None
        return json.loads(raw) if raw else None

    def result(self, job_id, wait_ms=None):
        """A job's saved result (acked with `result`), waiting up to `wait_ms`
        for it: the answer's `result` field (None for a JSON null). Raises
        ApiError 404 `not_found` when none came within the wait; the whole
        answer (`saved_at_ms`, `expires_at_ms`, ...) is `get_result`."""
        return self.get_result(job_id, wait_ms=wait_ms)["result"]

    def notify(self, channel, payload=""):
        """Send `payload` (text) to whoever listens on `channel` now
        (`notify_channel`)."""
        return self.notify_channel(channel, payload=payload)

    def rate_acquire(self, name, limit, per_ms):
        """Take one admission of the store-wide rate limit `name` (`limit`
        per `per_ms` window): `{"admitted", "remaining", "reset_at_ms"}`
        (`acquire_rate`)."""
        return self.acquire_rate(name, limit=limit, per_ms=per_ms)

    def listen(self, channel, timeout=60.0):
        """Notifications sent to `channel` from now on (`notify`, or an atomic
        request's `notify` op), as an iterator of `Notification`s; the
        connection is open once this returns. Close it (or use `with`) to
        stop. A read that gets nothing at all for `timeout` seconds (the
        server sends a keepalive every 15 s) raises TimeoutError."""
        return Listener(self, channel, timeout)

    listen_channel = listen  # the operation's own name (GET /api/v1/channels/{channel}/listen)


def _query_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


class Listener:
    """An open `GET /api/v1/channels/{channel}/listen` (server-sent events):
    iterate for `Notification`s; `close()` ends it."""

    def __init__(self, client, channel, timeout=60.0):
        self.channel = channel
        req = client._build("GET", f"/api/v1/channels/{_seg(channel)}/listen", accept="text/event-stream")
        try:
            self._res = urllib.request.urlopen(req, timeout=timeout)
        except urllib.error.HTTPError as e:
            with e:
                raise ApiError.from_body(e.code, e.read()) from None

    def __iter__(self):
        return self

    def __next__(self):
        event, data = None, []
        while True:
            res = self._res
            if res is None:
                raise StopIteration
            try:
                line = res.readline()
            except Exception:
                if self._res is None:  # closed by close(), from another thread
                    raise StopIteration from None
                raise
            if not line:
                self.close()
                raise StopIteration
            line = line.decode("utf-8", "replace")
            if line.endswith("\n"):
                line = line[:-1]
            if line.endswith("\r"):
                line = line[:-1]
            if not line:
                if event == "error":  # listening failed on the server: the stream ends
                    self.close()
                    why = "\n".join(data)
                    raise ConnectionError(f"listening on {self.channel!r} ended: {why}")
                if data:
                    return Notification(self.channel, event or "message", "\n".join(data))
                event = None
                continue
            if line.startswith(":"):
                continue  # a comment: the keepalive
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)

    def close(self):
        """Stop listening (also from another thread: a blocked read ends)."""
        res, self._res = self._res, None
        if res is None:
            return
        try:
            res.fp.raw._sock.shutdown(socket.SHUT_RDWR)
        except (AttributeError, OSError):
            pass
        res.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
