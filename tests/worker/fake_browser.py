"""A stand-in for a browser running the Perfetto UI, for ``BROWSER=… %s``: takes the link the
CLI opens, fetches the trace named by its ``#!/?url=`` the way the UI does (a CORS request with
an ``Origin`` header, after probing ``POST /status``), and writes what it got as JSON.

    python fake_browser.py LINK REPORT.json
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


def main() -> None:
    link, report = sys.argv[1], sys.argv[2]
    parts = urllib.parse.urlsplit(link)
    origin = f"{parts.scheme}://{parts.netloc}"
    route = parts.fragment  # "!/?url=http://127.0.0.1:9001/<token>/<name>"
    url = urllib.parse.parse_qs(route.split("?", 1)[1])["url"][0]
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    probe = urllib.parse.urljoin(url, "/status")
    try:
        opener.open(urllib.request.Request(probe, data=b"", method="POST"), timeout=10)
        status_probe = 200
    except urllib.error.HTTPError as exc:
        status_probe = exc.code
    with opener.open(urllib.request.Request(url, headers={"Origin": origin}), timeout=30) as r:
        body = r.read()
        result = {
            "link": link,
            "url": url,
            "status": r.status,
            "status_probe": status_probe,
            "allow_origin": r.headers.get("Access-Control-Allow-Origin"),
            "cache_control": r.headers.get("Cache-Control"),
            "size": len(body),
            "sha256": hashlib.sha256(body).hexdigest(),
        }
    with open(report + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(report + ".tmp", report)


if __name__ == "__main__":
    main()
