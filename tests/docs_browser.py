"""Open the built documentation in headless Chromium and check that its math rendered.

``python tests/docs_browser.py [--site build/site] [--screenshot build/docs-screenshot.png]``
serves the site ``make docs`` built on localhost (``http.server``), opens the conventions
page, the claim reference and every other page in Chromium (Debian's ``chromium``, driven
over the DevTools protocol with the standard library alone), and fails, naming the page and
what was found, where

- a formula is left as raw TeX: ``\\frac``, ``\\sqrt`` and the like in the rendered text
  outside KaTeX's output (code blocks, which show TeX source on purpose, aside), a math
  element KaTeX did not typeset, or a KaTeX error;
- a page logs a console error, throws, or fails to load a resource;
- a page requests anything but the local server (the site must work offline).

It saves a screenshot of the conventions table.  Exit status: 0 when every page passes,
1 when one fails, 2 when Chromium or the site is missing.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "site"
SCREENSHOT = ROOT / "build" / "docs-screenshot.png"
# The pages the check must find, whatever else the site holds.
REQUIRED = ("conventions.html", "claims.html")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--remote-debugging-port=0",
)
TIMEOUT = 30.0  # seconds for Chromium to start, a page to load or its math to be typeset

# In the page: every text node outside KaTeX's output and code that still reads as TeX, every
# math element KaTeX left untouched, and KaTeX's errors.
INSPECT = r"""
(() => {
  const names = "frac|dfrac|sqrt|left|right|begin|end|mathbf|mathbb|mathrm|operatorname|varepsilon|epsilon|" +
    "gamma|beta|mu|sigma|lvert|rvert|Vert|vert|cdot|text|lim|sum|infty|pm|le|ge|leq|geq|qquad|displaystyle";
  const tex = new RegExp("\\\\(" + names + ")(?![A-Za-z])|\\\\[()\\[\\]]|\\$\\$");
  const skipped = "script, style, noscript, pre, code, .katex, .katex-display";
  const raw = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest(skipped)) continue;
    const text = node.textContent;
    const found = text.match(tex);
    if (found) {
      const at = Math.max(0, found.index - 40);
      raw.push(text.slice(at, found.index + 60).replace(/\s+/g, " ").trim());
    }
  }
  const math = Array.from(document.querySelectorAll(".arithmatex"));
  return {
    katex: typeof renderMathInElement === "function",
    math: math.length,
    typeset: document.querySelectorAll(".katex").length,
    untypeset: math.filter((e) => !e.querySelector(".katex")).map((e) => e.textContent.trim().slice(0, 80)),
    errors: Array.from(document.querySelectorAll(".katex-error")).map((e) => e.textContent.slice(0, 80)),
    raw: raw,
  };
})()
"""


class Failure(Exception):
    """The check could not run (no Chromium, no site, a protocol error)."""


def find_chromium() -> str | None:
    """Chromium's path: ``$CHROMIUM``, else the first of Debian's names on PATH."""
    named = os.environ.get("CHROMIUM")
    if named:
        return named
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


# --- a WebSocket client, enough for the DevTools protocol (RFC 6455, text frames) -----------


class WebSocket:
    def __init__(self, url: str, timeout: float = TIMEOUT) -> None:
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET {parts.path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
                f"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise Failure("DevTools closed the connection during the handshake")
            head += chunk
        head, self.buffer = head.split(b"\r\n\r\n", 1)
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise Failure(f"DevTools refused the WebSocket: {status.decode(errors='replace')}")

    def _exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            chunk = self.sock.recv(max(65536, size - len(self.buffer)))
            if not chunk:
                raise Failure("DevTools closed the connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:size], self.buffer[size:]
        return out

    def _frame(self, opcode: int, payload: bytes) -> None:
        header = bytearray([0x80 | opcode])
        size = len(payload)
        if size < 126:
            header.append(0x80 | size)
        elif size < 1 << 16:
            header += bytes([0x80 | 126]) + size.to_bytes(2, "big")
        else:
            header += bytes([0x80 | 127]) + size.to_bytes(8, "big")
        mask = os.urandom(4)
        masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
        self.sock.sendall(bytes(header) + mask + masked)

    def send(self, text: str) -> None:
        self._frame(0x1, text.encode())

    def receive(self) -> str:
        """The next whole text message (fragments joined; pings answered)."""
        message = b""
        while True:
            first, second = self._exactly(2)
            fin, opcode, size = first & 0x80, first & 0x0F, second & 0x7F
            if size == 126:
                size = int.from_bytes(self._exactly(2), "big")
            elif size == 127:
                size = int.from_bytes(self._exactly(8), "big")
            mask = self._exactly(4) if second & 0x80 else b""
            payload = self._exactly(size)
            if mask:
                payload = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
            if opcode == 0x8:
                raise Failure("DevTools closed the connection")
            if opcode == 0x9:
                self._frame(0xA, payload)
                continue
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if fin:
                    return message.decode()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._frame(0x8, b"")
        self.sock.close()


class Page:
    """One Chromium tab over the DevTools protocol: commands, and the events between them."""

    def __init__(self, socket_url: str) -> None:
        self.ws = WebSocket(socket_url)
        self.sent = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.sent += 1
        self.ws.send(json.dumps({"id": self.sent, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == self.sent:
                if "error" in message:
                    raise Failure(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})
            self.events.append(message)

    def wait(self, method: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        """The first event ``method`` received and not yet waited for, waiting for it up to
        ``timeout``; the other events stay in `events`."""
        end = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            if time.monotonic() > end:
                raise Failure(f"no {method} within {timeout:g} s")
            self.ws.sock.settimeout(max(0.1, end - time.monotonic()))
            self.events.append(json.loads(self.ws.receive()))

    def evaluate(self, expression: str) -> Any:
        found = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in found:
            raise Failure(f"the page's check threw: {found['exceptionDetails'].get('text')}")
        return found["result"].get("value")


# --- the site, served on localhost --------------------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    missing: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if code == 404:
            self.missing.append(self.path)
        super().send_error(code, message, explain)


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, list[str]]:
    missing: list[str] = []
    handler = functools.partial(type("Handler", (_Quiet,), {"missing": missing}), directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, missing


def pages(site: Path) -> list[str]:
    """Every page of the site, the required ones first, by its path under the site's root (the
    site is built with plain .html names, so that it opens from disk too)."""
    found = sorted(
        str(path.relative_to(site))
        for path in site.rglob("*.html")
        if path.name != "404.html" and path.relative_to(site).parts[0] not in ("assets", "search")
    )
    return [*REQUIRED, *(page for page in found if page not in REQUIRED)]


# --- Chromium -------------------------------------------------------------------------------


def launch(chromium: str, profile: str) -> tuple[subprocess.Popen[str], str, threading.Thread]:
    """Chromium started headless on a fresh profile, its DevTools address, and the thread that
    reads its stderr (until Chromium ends)."""
    process = subprocess.Popen(
        [chromium, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its renderers and helpers in one process group, ended together
    )
    lines: list[str] = []
    ready = threading.Event()
    address: list[str] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                address.append(found.group(1))
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if not ready.wait(TIMEOUT) or not address:
        stop(process, reader)
        raise Failure("Chromium did not start: " + " | ".join(lines[-5:]))
    return process, address[0], reader


def stop(process: subprocess.Popen[str], reader: threading.Thread) -> None:
    """End the Chromium this module started, and the processes it started, by their group."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    reader.join(timeout=10)
    if process.stderr is not None:
        process.stderr.close()


def new_tab(browser: str) -> str:
    """A new tab's WebSocket address, from the DevTools HTTP endpoint."""
    parts = urllib.parse.urlsplit(browser)
    request = urllib.request.Request(f"http://{parts.hostname}:{parts.port}/json/new?about:blank", method="PUT")
    with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
        return json.load(answer)["webSocketDebuggerUrl"]


# --- the check ------------------------------------------------------------------------------


def problems_in(events: list[dict[str, Any]], local: str) -> list[str]:
    """What the events of one page's load say went wrong."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text")
            found.append(f"uncaught exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
            found.append(f"console.{params['type']}: {text}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            found.append(f"console error ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".rstrip())
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith((local, "data:", "blob:", "about:")):
                found.append(f"a request outside the site (the site must work offline): {url}")
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            found.append(f"a resource failed to load: {params.get('errorText')}")
        elif method == "Network.responseReceived":
            response = params.get("response", {})
            if response.get("status", 200) >= 400:
                found.append(f"HTTP {response.get('status')} for {response.get('url')}")
    return found


def typeset(page: Page) -> dict[str, Any]:
    """The page's math once KaTeX is done with it, or the time is up, or the page has no KaTeX."""
    end = time.monotonic() + TIMEOUT
    while True:
        state = page.evaluate(INSPECT)
        if not state["untypeset"] or not state["katex"] or time.monotonic() > end:
            return state
        time.sleep(0.1)


def check_page(page: Page, url: str, local: str) -> tuple[list[str], dict[str, Any]]:
    page.events.clear()
    page.call("Page.navigate", url=url)
    page.wait("Page.loadEventFired")
    state = typeset(page)
    time.sleep(0.2)  # late console messages
    page.call("Runtime.evaluate", expression="0")  # collects the events sent meanwhile
    found = problems_in(page.events, local)
    found += [f"raw TeX in the rendered text: {snippet!r}" for snippet in state["raw"]]
    found += [f"math KaTeX did not typeset: {snippet!r}" for snippet in state["untypeset"]]
    found += [f"KaTeX error: {snippet!r}" for snippet in state["errors"]]
    return found, state


def run(site: Path, screenshot: Path | None, chromium: str) -> list[str]:
    """Every problem found on the site's pages, each as ``page: problem``."""
    server, missing = serve(site)
    local = f"http://127.0.0.1:{server.server_address[1]}/"
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="docs-browser-") as profile:
        process, browser, reader = launch(chromium, profile)
        page = None
        try:
            page = Page(new_tab(browser))
            for domain in ("Page", "Runtime", "Log", "Network"):
                page.call(f"{domain}.enable")
            page.call("Emulation.setDeviceMetricsOverride", width=1600, height=1400, deviceScaleFactor=1, mobile=False)
            for path in pages(site):
                found, state = check_page(page, local + path, local)
                if path in REQUIRED and state["typeset"] == 0:
                    found.append("no formula was typeset on a page that holds formulas")
                failures += [f"{path or '/'}: {problem}" for problem in found]
                print(f"{path or '/':<24} {state['typeset']:4d} formulas typeset, {len(found)} problems")
                if path == REQUIRED[0] and screenshot is not None:
                    shot = page.call("Page.captureScreenshot", format="png")
                    screenshot.parent.mkdir(parents=True, exist_ok=True)
                    screenshot.write_bytes(base64.b64decode(shot["data"]))
        finally:
            if page is not None:
                page.ws.close()
            stop(process, reader)
            server.shutdown()
            server.server_close()
    failures += [f"404 from the site: {path}" for path in missing]
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tests/docs_browser.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=SITE, help="the built site (default: build/site)")
    parser.add_argument("--screenshot", type=Path, default=SCREENSHOT, help="where to save the conventions table")
    args = parser.parse_args(argv)
    chromium = find_chromium()
    if chromium is None:
        print("docs_browser: no chromium on PATH (apt-get install chromium, or set CHROMIUM)", file=sys.stderr)
        return 2
    if not all((args.site / page).is_file() for page in REQUIRED):
        print(f"docs_browser: no built site in {args.site} (run make docs)", file=sys.stderr)
        return 2
    start = time.monotonic()
    try:
        failures = run(args.site, args.screenshot, chromium)
    except Failure as error:
        print(f"docs_browser: {error}", file=sys.stderr)
        return 1
    for failure in failures:
        print(f"FAIL {failure}", file=sys.stderr)
    took = time.monotonic() - start
    if failures:
        print(f"docs_browser: {len(failures)} problems ({took:.1f} s)", file=sys.stderr)
        return 1
    print(f"docs_browser: every page rendered its math, no console error ({took:.1f} s); screenshot {args.screenshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
