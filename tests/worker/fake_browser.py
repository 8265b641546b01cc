"""A stand-in for a browser running the Perfetto UI, for ``BROWSER=… %s``: takes the link the
CLI opens, fetches the trace named by its ``#!/?url=`` the way the UI does (a CORS request with
an ``Origin`` header, after probing ``POST /status``), and writes what it got as JSON.

    python fake_browser.py LINK REPORT.json
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request


def follow_redirect_file(argument: str) -> tuple[str, dict[str, object]]:
    """torchscope opens a private redirect page (so the token is not in argv): read it as a
    browser would and return the link it redirects to, with what the page's file looked like."""
    if not argument.startswith("file://"):
        return argument, {"opened": argument}
    page = urllib.parse.unquote(urllib.parse.urlsplit(argument).path)
    with open(page, encoding="utf-8") as handle:
        text = handle.read()
    link = html.unescape(re.search(r'content="0;url=([^"]+)"', text).group(1))  # type: ignore[union-attr]
    mode = os.stat(page).st_mode & 0o777
    return link, {"opened": argument, "page_mode": mode}


def main() -> None:
    link, page = follow_redirect_file(sys.argv[1])
    report = sys.argv[2]
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
            **page,
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
