"""Run by tests/test_web_diff_bounds.py in a child process: /diff requests on an archive.

``python web_diff_child.py ARCHIVE URL VIEW N`` sends N requests for the diff of URL's two
captures at once and prints, as JSON, their statuses, a piece of the first 200's body and
the growth of the process's peak resident size over the requests (VmHWM, reset first).
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from pathlib import Path
from urllib.parse import urlencode

from aiohttp.test_utils import TestClient, TestServer
from archiver_plugins.replay.app import make_app


def peak_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_peak() -> float:
    """Start the peak resident size again from the current size (Linux), and return it."""
    Path("/proc/self/clear_refs").write_text("5")
    return peak_mb()


async def main(archive: Path, url: str, view: str, count: int) -> None:
    client = TestClient(TestServer(make_app([archive]), host="127.0.0.1"))
    await client.start_server()
    try:
        await (await client.get("/history?" + urlencode({"url": url}))).read()  # the archive is indexed
        gc.collect()
        before = reset_peak()

        async def one() -> tuple[int, str, str]:
            response = await client.get("/diff?" + urlencode({"url": url, "view": view}))
            return response.status, response.headers.get("Retry-After", ""), await response.text()

        answers = await asyncio.gather(*(one() for _ in range(count)))
        grown = peak_mb() - before
    finally:
        await client.close()
    bodies = [body for status, _, body in answers if status == 200]
    print(
        json.dumps(
            {
                "statuses": [status for status, _, _ in answers],
                "retry_after": [retry for _, retry, _ in answers if retry],
                "body": bodies[0] if bodies else "",
                "grown_mb": grown,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])))
