"""A terminal in a user's server, driven as JupyterLab drives one: created through the server's
REST API and spoken to over its websocket (terminado's messages). What runs there runs inside
the server: in its control group, with its /tmp."""

from __future__ import annotations

import json
import time

import requests
import websocket


class Terminal:
    def __init__(self, session: requests.Session, base: str, user: str):
        xsrf = session.cookies.get("_xsrf", path=f"/user/{user}/") or session.cookies.get(
            "_xsrf", path="/hub/")
        r = session.post(f"{base}/user/{user}/api/terminals", timeout=60,
                         headers={"X-XSRFToken": xsrf or ""})
        assert r.status_code == 200, f"no terminal for {user}: {r.status_code} {r.text[:300]}"
        self.name = r.json()["name"]
        cookies = "; ".join(f"{c.name}={c.value}" for c in session.cookies)
        url = base.replace("http://", "ws://") + f"/user/{user}/terminals/websocket/{self.name}"
        self.ws = websocket.create_connection(url, header=[f"Cookie: {cookies}"], timeout=10,
                                              origin=base)
        self.count = 0

    def run(self, command: str, timeout: float = 60) -> tuple[int, str]:
        """(exit status, output) of `command` typed into the terminal."""
        self.count += 1
        mark = f"DONE{self.count}"
        # the shell echoes what is typed: the marker is written split, so only its output
        # has it whole
        self.ws.send(json.dumps(["stdin", f"{command}; echo {mark[:2]}''{mark[2:]}-$?\r"]))
        out, deadline = "", time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                continue
            if message[0] == "stdout":
                out += message[1]
                if f"{mark}-" in out:
                    tail = out.split(f"{mark}-", 1)[1]
                    digits = "".join(ch for ch in tail.split("\r", 1)[0] if ch.isdigit())
                    if digits and "\r" in tail:
                        return int(digits), out.split(f"{mark}-", 1)[0]
        raise AssertionError(f"{command!r} did not finish in {timeout} s: {out[-2000:]}")

    def close(self) -> None:
        self.ws.close()
