"""Headless Chromium for the HTML tests, driven over the Chrome DevTools
protocol on a pipe (--remote-debugging-pipe: JSON messages separated by NUL
bytes on file descriptors 3 and 4), so no websocket library is needed.

    with Browser() as b:
        page = b.open("/tmp/report.html", screenshot="shot.png")
        page.requests      # every URL the page asked for (the file itself first)
        page.errors        # console errors, uncaught exceptions, failed loads
        page.eval("document.title")

find_chromium() is the executable or None. Tests that need it skip when it
is missing, unless DUCKPROF_REQUIRE_BROWSER=1 (set by .ci/run): then they
fail, so CI cannot pass with the browser tests skipped.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars"]


def find_chromium() -> str | None:
    for name in (os.environ.get("DUCKPROF_CHROMIUM"), "chromium", "chromium-browser", "google-chrome",
                 "google-chrome-stable", "chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def require_browser() -> str:
    """The Chromium executable; skips the test when there is none (fails in CI)."""
    exe = find_chromium()
    if exe is None:
        msg = ("no Chromium found (apt-get install chromium, or set DUCKPROF_CHROMIUM): "
               "the browser tests of duckprof html did not run")
        if os.environ.get("DUCKPROF_REQUIRE_BROWSER") == "1":
            pytest.fail(msg + " and DUCKPROF_REQUIRE_BROWSER=1 requires them")
        pytest.skip(msg)
    return exe


@dataclass
class Loaded:
    url: str
    requests: list = field(default_factory=list)     # URLs requested
    errors: list = field(default_factory=list)       # console errors, exceptions, failed loads
    dialogs: list = field(default_factory=list)      # alert()/confirm() messages
    browser: "Browser | None" = None
    session: str = ""

    def eval(self, expression: str):
        """Evaluate JS in the page; returns the value (JSON-serialisable)."""
        r = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                   "awaitPromise": True}, self.session)
        if "exceptionDetails" in r:
            raise AssertionError(f"JS error: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path, selector: str | None = None, width: int = 1280, scale: float = 1.0):
        """A PNG of the page (or of the element `selector`), `width` CSS px
        wide, scaled by `scale` (0.5: half as many pixels each way)."""
        clip = None
        if selector:
            box = self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                            " e.scrollIntoView(); const r = e.getBoundingClientRect();"
                            " return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]; })()")
            clip = {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": scale}
        params = {"format": "png", "captureBeyondViewport": True}
        if clip:
            params["clip"] = clip
        else:
            h = self.eval("document.documentElement.scrollHeight")
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": h, "scale": scale}
        data = self.browser.call("Page.captureScreenshot", params, self.session)["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)


class Browser:
    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 60):
        self.exe = require_browser()
        self.width, self.height, self.timeout = width, height, timeout
        self.profile = tempfile.mkdtemp(prefix="duckprof-chromium-")
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()

        def fds():  # the child reads commands on fd 3 and writes replies on fd 4
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [self.exe, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list = []

    # -- the protocol ---------------------------------------------------------
    def _send(self, method, params=None, session=None) -> int:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        return self._id

    def _recv(self, timeout: float) -> dict | None:
        end = time.monotonic() + timeout
        while b"\0" not in self._buf:
            left = end - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._r], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe (did it crash?)")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        i = self._send(method, params, session)
        end = time.monotonic() + self.timeout
        while time.monotonic() < end:
            m = self._recv(end - time.monotonic())
            if m is None:
                break
            if m.get("id") == i:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)
        raise TimeoutError(f"{method}: no answer from Chromium in {self.timeout} s")

    def drain(self, seconds: float):
        end = time.monotonic() + seconds
        while True:
            m = self._recv(max(0.0, end - time.monotonic()))
            if m is None:
                return
            self.events.append(m)

    # -- pages ------------------------------------------------------------------
    def open(self, path, settle: float = 0.5) -> Loaded:
        """Load a local file in a fresh tab and record what it did."""
        url = Path(path).resolve().as_uri()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable", session=sid)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False}, sid)
        start = len(self.events)
        self.call("Page.navigate", {"url": url}, sid)
        end = time.monotonic() + self.timeout
        loaded = False
        while not loaded and time.monotonic() < end:
            m = self._recv(end - time.monotonic())
            if m is None:
                break
            self.events.append(m)
            loaded = m.get("method") == "Page.loadEventFired" and m.get("sessionId") == sid
        if not loaded:
            raise TimeoutError(f"{url} did not load in {self.timeout} s")
        self.drain(settle)
        page = Loaded(url, browser=self, session=sid)
        for m in self.events[start:]:
            if m.get("sessionId") != sid:
                continue
            method, p = m.get("method"), m.get("params", {})
            if method == "Network.requestWillBeSent":
                page.requests.append(p["request"]["url"])
            elif method == "Runtime.exceptionThrown":
                page.errors.append(p["exceptionDetails"].get("exception", {}).get("description")
                                   or p["exceptionDetails"].get("text"))
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                page.errors.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
                page.errors.append(p["entry"]["text"])
            elif method == "Page.javascriptDialogOpening":
                page.dialogs.append(p.get("message"))
                self._send("Page.handleJavaScriptDialog", {"accept": True}, sid)
        return page

    def close(self):
        try:
            self._send("Browser.close")
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        finally:
            os.close(self._w)
            os.close(self._r)
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
