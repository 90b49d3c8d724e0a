"""Does the phone profile's CPU throttling slow the worker where Python runs? (issue 44)

    .venv/bin/python benchmarks/throttle.py [--rounds 3] [--spins 20000000]

One Chromium, one run, taking turns: a fixed busy loop (integer arithmetic, no allocation,
warmed up by the JIT first) timed on a page's main thread and in its dedicated worker, each
by its own thread's clock (the median of 3 calls), in three visits: no throttling;
phone.CPU_SLOWDOWN sent to the page's CDP session (phone.throttle); and sent as well to each
worker's own session, attached as it starts (Target.setAutoAttach, the worker paused until it
is sent). Prints each time and its ratio to the unthrottled visit's in the same round: about
CPU_SLOWDOWN where the throttling reaches that thread, about 1 where it does not; and what
each worker answered to the command.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import phone  # noqa: E402
from conftest import CHROMIUM_ARGS, chromium_path  # noqa: E402

ORIGIN = "http://throttle.test/"  # answered by the context's route: no server
SPIN = "function spin(n) { let x = 0; for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003; return x; }"
PAGE = f"""<!doctype html><html><head><meta charset="utf-8"><title>throttle</title></head><body><script>
{SPIN}
const code = {SPIN!r} + "; onmessage = (e) => {{ const t = performance.now(); spin(e.data); postMessage(performance.now() - t); }};";
const worker = new Worker(URL.createObjectURL(new Blob([code], {{ type: 'text/javascript' }})));
window.inWorker = (n) => new Promise((resolve) => {{ worker.onmessage = (e) => resolve(e.data); worker.postMessage(n); }});
window.onMain = (n) => {{ const t = performance.now(); spin(n); return performance.now() - t; }};
</script></body></html>"""
# ms of `n` spins on the page's thread and in its worker: one call each to warm the JIT, then the median of 3
TIME = """async (n) => {
  const median = (xs) => xs.sort((a, b) => a - b)[1];
  onMain(n); await inWorker(n);
  const main = [onMain(n), onMain(n), onMain(n)];
  const worker = [await inWorker(n), await inWorker(n), await inWorker(n)];
  return [median(main), median(worker)];
}"""
VISITS = {  # name -> how the visit is throttled: (rate, each worker's session too)
    "none": (1, False),
    "page's session (phone.py)": (phone.CPU_SLOWDOWN, False),
    "page's and each worker's session": (phone.CPU_SLOWDOWN, True),
}


def throttle_workers(cdp, rate: float) -> dict:
    """Send Emulation.setCPUThrottlingRate to each worker of the page as it starts, before it
    runs; {command id: the worker's reply} (None until it comes)."""
    replies, ids = {}, iter(range(1, 1 << 30))

    def attached(event):  # every target attached waits: a worker is sent the rate, then all run
        commands = [("Emulation.setCPUThrottlingRate", {"rate": rate})] if event["targetInfo"]["type"] == "worker" else []
        for method, params in commands + [("Runtime.runIfWaitingForDebugger", {})]:
            message = {"id": next(ids), "method": method, "params": params}
            if method.startswith("Emulation"):
                replies[message["id"]] = None
            cdp.send("Target.sendMessageToTarget", {"sessionId": event["sessionId"], "message": json.dumps(message)})

    def received(event):
        reply = json.loads(event["message"])
        if reply.get("id") in replies:
            replies[reply["id"]] = reply.get("error", {}).get("message", "accepted")

    cdp.on("Target.attachedToTarget", attached)
    cdp.on("Target.receivedMessageFromTarget", received)
    cdp.send("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": False})
    return replies


def visit(browser, rate: float, workers: bool, spins: int) -> tuple[float, float, list]:
    """(main thread ms, worker ms, what each worker answered to the throttling)."""
    ctx = browser.new_context()
    try:
        ctx.route(ORIGIN + "**", lambda route: route.fulfill(body=PAGE, content_type="text/html"))
        page = ctx.new_page()
        cdp = phone.throttle(ctx, page, rate)
        replies = throttle_workers(cdp, rate) if workers else {}
        page.goto(ORIGIN)
        main, worker = page.evaluate(TIME, spins)
        return main, worker, sorted(set(map(str, replies.values())))
    finally:
        ctx.close()


def main() -> None:
    import argparse

    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--spins", type=int, default=20_000_000)
    args = ap.parse_args()
    runs = {name: [] for name in VISITS}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        print(f"Chromium {browser.version}; {args.spins:,} spins; rate {phone.CPU_SLOWDOWN}")
        for round_ in range(args.rounds):
            for name in sorted(VISITS, reverse=round_ % 2 == 1):  # which goes first alternates
                runs[name].append(visit(browser, *VISITS[name], args.spins))
        browser.close()
    base = runs["none"]
    print(f"{'visit':<36}{'main thread':>22}{'worker':>22}  the worker's answer")
    for name, got in runs.items():
        cells = []
        for i in (0, 1):
            ms = statistics.median(r[i] for r in got)
            ratio = statistics.median(r[i] / b[i] for r, b in zip(got, base))  # each round against its own
            cells.append(f"{ms:8.0f} ms {ratio:5.2f}x")
        print(f"{name:<36}{cells[0]:>22}{cells[1]:>22}  {'; '.join(got[0][2]) or '-'}")


if __name__ == "__main__":
    main()
