#!/usr/bin/env python3
"""Open an iolab HTML report in headless Chromium and check it the way a
reader's browser would: no console errors, no uncaught exceptions, no
network request (anything but file: and data: URLs), every chart drawn;
then a PNG screenshot of each part of the report.

    python3 bench/report_check.py REPORT.html [--shots docs/report] [--json]

Needs Debian's `chromium` (installed here if missing) and the
`websocket-client` module (pip). Talks to Chromium over the DevTools
protocol; child frames (the flame graphs' data: iframes) are attached
too, so their errors count. Exit status 1 when a check fails.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request


def ensure_tools():
    if not shutil.which("chromium"):
        subprocess.run(["apt-get", "install", "-y", "chromium"], check=True,
                       stdout=subprocess.DEVNULL)
    try:
        import websocket  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        "websocket-client"], check=True)


class Cdp:
    def __init__(self, ws_url):
        import websocket
        self.ws = websocket.create_connection(ws_url, timeout=60,
                                              suppress_origin=True)
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        want = self.next_id
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.on_event(m)

    def on_event(self, m):
        self.events.append(m)
        if m.get("method") == "Target.attachedToTarget":
            s = m["params"]["sessionId"]
            for meth in ["Runtime.enable", "Log.enable", "Network.enable"]:
                self.send(meth, session=s)
            self.send("Runtime.runIfWaitingForDebugger", session=s)

    def pump(self, seconds):
        end = time.time() + seconds
        self.ws.settimeout(0.2)
        while time.time() < end:
            try:
                m = json.loads(self.ws.recv())
            except Exception:
                continue
            self.on_event(m)
        self.ws.settimeout(60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--shots", help="directory for one PNG per part")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    ensure_tools()
    path = os.path.abspath(a.report)
    profile = tempfile.mkdtemp(prefix="iolab-chromium-")
    proc = subprocess.Popen(
        ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--no-default-browser-check",
         "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-extensions",
         "--remote-debugging-port=0", f"--user-data-dir={profile}",
         "--window-size=1280,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        # Chromium's own temp dirs (org.chromium.*) go in the profile,
        # removed below, not in /tmp.
        env={**os.environ, "TMPDIR": profile})
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read().count("\n") >= 1:
                break
            time.sleep(0.05)
        port = open(port_file).read().split("\n")[0]
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(p for p in pages if p["type"] == "page")
        cdp = Cdp(page["webSocketDebuggerUrl"])
        for m in ["Runtime.enable", "Log.enable", "Network.enable", "Page.enable"]:
            cdp.send(m)
        cdp.send("Target.setAutoAttach", {"autoAttach": True,
                 "waitForDebuggerOnStart": True, "flatten": True})
        t0 = time.time()
        cdp.send("Page.navigate", {"url": "file://" + path})
        while not any(e.get("method") == "Page.loadEventFired" for e in cdp.events):
            cdp.pump(0.2)
            if time.time() - t0 > 60:
                raise RuntimeError("page did not load in 60 s")
        load_s = time.time() - t0
        # Open every <details> so lazy flame-graph frames load and render.
        cdp.send("Runtime.evaluate", {"expression":
                 "document.querySelectorAll('details').forEach(d => d.open = true)"})
        cdp.pump(3.0)
        stats = cdp.send("Runtime.evaluate", {"returnByValue": True, "expression": """
            (() => {
              const d = JSON.parse(document.getElementById('iolab-data').textContent);
              return {
                svgs: document.querySelectorAll('main svg').length,
                bars: document.querySelectorAll('svg rect.bar').length,
                flames: document.querySelectorAll('iframe.flame').length,
                parts: [...document.querySelectorAll('.part, section#compare')].map(e => {
                  const r = e.getBoundingClientRect();
                  return {id: e.id, x: r.x + scrollX, y: r.y + scrollY, w: r.width, h: r.height};
                }),
                views: d.views.length,
              };
            })()"""})["result"]["value"]
        requests, errors = [], []
        for e in cdp.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Network.requestWillBeSent":
                requests.append(p["request"]["url"])
            elif m == "Runtime.exceptionThrown":
                errors.append("exception: " + json.dumps(p["exceptionDetails"])[:300])
            elif m == "Runtime.consoleAPICalled" and p["type"] in ("error", "warning", "assert"):
                errors.append(f"console.{p['type']}: " + json.dumps(p["args"])[:300])
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                errors.append(f"log {p['entry']['level']}: {p['entry']['text'][:300]}")
        network = [u for u in requests if not u.startswith(("file:", "data:"))]
        shots = []
        if a.shots:
            os.makedirs(a.shots, exist_ok=True)
            for part in stats["parts"]:
                if part["h"] < 1:
                    continue
                h = min(part["h"], 2400)
                img = cdp.send("Page.captureScreenshot", {"format": "png",
                    "captureBeyondViewport": True,
                    "clip": {"x": part["x"], "y": part["y"], "width": part["w"],
                             "height": h, "scale": 1}})
                name = os.path.join(a.shots, f"{part['id']}.png")
                with open(name, "wb") as f:
                    f.write(base64.b64decode(img["data"]))
                shots.append(name)
        out = {
            "report": path, "bytes": os.path.getsize(path),
            "load_s": round(load_s, 3), "svgs": stats["svgs"], "bars": stats["bars"],
            "flame_frames": stats["flames"], "views": stats["views"],
            "requests": len(requests), "network_requests": network,
            "errors": errors, "screenshots": shots,
        }
        ok = not network and not errors and stats["svgs"] > 0
        out["ok"] = ok
        if a.json:
            print(json.dumps(out, indent=1))
        else:
            print(f"{path}: {out['bytes']} bytes, loaded in {load_s:.2f} s, "
                  f"{stats['svgs']} charts, {stats['flames']} flame graphs; "
                  f"{len(requests)} requests, {len(network)} to the network, "
                  f"{len(errors)} console errors")
            for x in network + errors:
                print("  " + x)
            for s in shots:
                print("  screenshot " + s)
        return 0 if ok else 1
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
