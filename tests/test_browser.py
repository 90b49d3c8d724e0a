"""In Chromium, on 127.0.0.1: widgets become interactive and agree with CPython."""

from __future__ import annotations

import json

import pytest

import book
import drawing
import tolerance
from build_hooks.runtime import assets, trim
from conftest import KERNEL_WARM, watching
from widgets_py import formatted, run
from widgets_py.engine import svg
from widgets_py.engine.registry import is_measured

pytestmark = pytest.mark.browser

PAGE = "cap15/"
READY = '.tw-widget[data-state="ready"]'
BOOT_MS = 90_000


def dom_params(page, sel: str) -> dict:
    """The parameters the widget's controls currently show, read by the host's own reader."""
    return page.eval_on_selector(sel, "w => window.tw.readParams(w)")


def assert_matches_cpython(page, sel: str) -> None:
    name = page.get_attribute(sel, "data-widget")
    instance = page.get_attribute(sel, "data-instance")
    params = dom_params(page, sel)
    layout, drawn = page.eval_on_selector(sel, drawing.SHOWN)
    result = run(name, params, (svg.layout(layout),))
    expected = result.values
    shown = json.loads(page.get_attribute(sel, "data-values"))
    assert drawing.structure(drawn) == drawing.structure(drawing.expected(name, params, layout, shown, result)), \
        f"{name}: the page's drawing is not CPython's"
    assert shown.keys() == expected.keys()
    for key, value in expected.items():
        if not is_measured(name, key):
            # numpy without BLAS (Pyodide) sums float32 products in another order than OpenBLAS
            assert shown[key] == tolerance.expected(name, key, value), key
    text = formatted(name, expected)
    for key, dd in page.eval_on_selector_all(f"{sel} .tw-values [data-value]",
                                             "rows => rows.map(r => [r.dataset.value, r.querySelector('dd').textContent])"):
        assert is_measured(name, key) or dd == text[key], key
    for ref, live in page.eval_on_selector_all(f'.tw-live[data-live^="{instance}."]',
                                               "spans => spans.map(s => [s.dataset.live, s.textContent])"):
        assert is_measured(name, ref.split(".", 1)[1]) or live == text[ref.split(".", 1)[1]], ref


def wait_idle(page, sel: str) -> None:
    page.wait_for_function("s => { const w = document.querySelector(s); return w.dataset.state === 'ready' && !w.dataset.busy; }",
                           arg=sel, timeout=20_000)


def test_without_javascript_the_prerendered_page_is_complete(browser, server):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(server + PAGE)
    widget = page.locator(".tw-widget").first
    assert widget.get_attribute("data-state") == "static"
    assert widget.locator(".tw-figure > [data-layout=wide] svg").is_visible()  # at a desktop width: the wide drawing
    expected = formatted("roofline", run("roofline").values)["tpot_ms"]  # the first widget, at its defaults
    assert page.locator('.tw-values [data-value="tpot_ms"] dd').first.text_content() == expected
    assert page.locator("math").count() >= 2
    context.close()


def test_widget_goes_ready_responds_and_agrees_with_cpython(watched, server):
    page = watched.page
    page.goto(server + PAGE)
    sel = '.tw-widget[data-widget="roofline"]'
    assert page.get_attribute(sel, "data-state") in ("static", "loading")
    page.wait_for_selector(READY, timeout=BOOT_MS)
    assert page.locator(f"{sel} select[name=model]").is_enabled()

    figure = page.inner_html(f"{sel} .tw-figure")
    tpot = page.text_content(f'{sel} [data-value="tpot_ms"] dd')
    page.select_option(f"{sel} select[name=model]", "mixtral-8x7b")
    page.wait_for_function("([s, t]) => document.querySelector(s + ' [data-value=\"tpot_ms\"] dd').textContent !== t",
                           arg=[sel, tpot], timeout=20_000)
    wait_idle(page, sel)
    assert page.inner_html(f"{sel} .tw-figure") != figure
    assert_matches_cpython(page, sel)

    # keyboard only: focus the batch slider, step it down; the figure and numbers follow
    figure = page.inner_html(f"{sel} .tw-figure")
    page.focus(f"{sel} input[name=batch]")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("s => document.querySelector(s).dataset.values && JSON.parse(document.querySelector(s).dataset.values).batch_tps !== undefined", arg=sel)
    wait_idle(page, sel)
    assert dom_params(page, sel)["batch"] == 8
    assert page.text_content(f"{sel} .tw-controls output") is not None
    assert page.inner_html(f"{sel} .tw-figure") != figure
    assert_matches_cpython(page, sel)

    origin = server.rstrip("/")
    leaving = [u for u in watched.requests if not (u.startswith(origin) or u.startswith(("data:", "blob:")))]
    assert leaving == []
    assert watched.errors == []


def test_the_worker_warms_every_module_and_first_change_up(watched, server):
    """After the page is interactive, the worker runs browser.WarmUp a task per turn: every
    widget module, every preparation a first change would pay, the staged widgets at their
    defaults; then says so: nothing failed. The first quantize change then scores only the
    formats a new group alters: never the original model again."""
    page = watched.page
    page.goto(server + PAGE)
    page.wait_for_selector(READY, timeout=BOOT_MS)
    page.wait_for_function(KERNEL_WARM, timeout=60_000)
    assert page.evaluate(KERNEL_WARM) == {"failed": []}
    sel = '.tw-widget[data-widget="quantize"]'
    wait_idle(page, sel)
    statuses = page.evaluate("""s => new Promise((resolve) => {
      const w = document.querySelector(s), seen = [];
      new MutationObserver((_, obs) => {
        seen.push(w.querySelector('.tw-status').textContent);
        if (!w.dataset.busy) { obs.disconnect(); resolve(seen); }
      }).observe(w, {subtree: true, attributes: true, childList: true, characterData: true});
      const group = w.querySelector('[name=group]');
      group.value = 1;
      group.dispatchEvent(new Event('input', {bubbles: true}));
    })""", sel)
    assert any("pèrdua a INT4" in s for s in statuses), statuses
    assert not any("model original" in s for s in statuses), statuses
    assert_matches_cpython(page, sel)
    assert watched.errors == []


def move_a_control(page, sel: str) -> bool:
    """Change the widget's controls one at a time (another option, a slider step, a box)
    until its figure or its numbers change; False if none of them changes anything."""
    before = page.inner_html(f"{sel} .tw-figure"), page.inner_text(f"{sel} .tw-values")
    controls = page.eval_on_selector_all(f"{sel} .tw-controls [name]:not([type=hidden])",
                                         "els => els.map(e => [e.name, e.tagName, e.type, e.value, e.max])")
    for name, tag, kind, value, top in controls:
        control = f"{sel} [name={name}]"
        if tag == "SELECT":
            options = page.eval_on_selector_all(f"{control} option", "os => os.map(o => o.value)")
            page.select_option(control, next(o for o in options if o != value))
        elif kind == "checkbox":
            page.click(control)
        else:
            page.focus(control)
            page.keyboard.press("ArrowLeft" if value == top else "ArrowRight")
        page.wait_for_function("s => document.querySelector(s).dataset.values", arg=sel, timeout=20_000)
        wait_idle(page, sel)
        if (page.inner_html(f"{sel} .tw-figure"), page.inner_text(f"{sel} .tw-values")) != before:
            return True
    return False


@pytest.fixture(scope="module")
def pages_with_widgets(site):
    return book.widget_pages(site)


def test_every_widget_of_every_chapter_responds_and_agrees_with_cpython(watched, server, pages_with_widgets):
    page = watched.page
    seen = set()
    for url in pages_with_widgets:
        page.goto(server + url)
        page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')",
                               timeout=BOOT_MS)
        for instance, trainable in page.eval_on_selector_all(
                ".tw-widget", "ws => ws.map(w => [w.dataset.instance, Boolean(w.querySelector('.tw-train'))])"):
            if trainable:
                continue  # its controls set up the training button (the training tests press it)
            sel = f'.tw-widget[data-instance="{instance}"]'
            assert move_a_control(page, sel), f"{url}: no control of {instance} changes its figure or numbers"
            assert_matches_cpython(page, sel)
            seen.add(page.get_attribute(sel, "data-widget"))
    assert {"roofline", "kv_cache", "batching", "cost", "clock", "quantize", "speculative", "sampling", "kv_size"} <= seen
    assert watched.errors == []
    origin = server.rstrip("/")
    assert [u for u in watched.requests if not u.startswith((origin, "data:", "blob:"))] == []
    whole = (trim.STDLIB_FULL, assets.NUMPY_WHEEL)  # what the trimmed runtime left out (build_hooks/runtime/trim.py)
    assert [u for u in watched.requests if u.split("?")[0].endswith(whole)] == []


def test_latest_change_wins(watched, server):
    page = watched.page
    page.goto(server + PAGE)
    sel = '.tw-widget[data-widget="roofline"]'
    page.wait_for_selector(READY, timeout=BOOT_MS)
    page.eval_on_selector(f"{sel} input[name=prompt_tokens]", """el => {
        for (const v of [0, 3, 7, 11, 2, 13, 5]) { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }
    }""")
    wait_idle(page, sel)
    assert dom_params(page, sel)["prompt_tokens"] == 512
    assert page.text_content(f"{sel} .tw-controls output >> nth=0") is not None
    assert_matches_cpython(page, sel)
    assert watched.errors == []


def test_blocked_pyodide_leaves_a_readable_page(watched, server):
    page = watched.page
    page.route("**/pyodide/pyodide.js", lambda route: route.abort())
    page.goto(server + PAGE)
    sel = '.tw-widget[data-widget="roofline"]'
    page.wait_for_selector('.tw-widget[data-state="error"]', timeout=BOOT_MS)
    assert page.locator(f"{sel} .tw-figure svg").first.is_visible()
    assert "No s'ha pogut carregar Python" in page.text_content(f"{sel} .tw-status")
    assert page.text_content(f'{sel} [data-value="tpot_ms"] dd') == formatted("roofline", run("roofline").values)["tpot_ms"]
    assert page.locator(f"{sel} select[name=model]").is_disabled()
    # the rest of the page keeps working: the light/dark toggle still switches
    scheme = page.get_attribute("body", "data-md-color-scheme")
    page.click("form[data-md-component=palette] label:visible")
    assert page.get_attribute("body", "data-md-color-scheme") != scheme


def test_built_in_search_finds_chapter_text(watched, server):
    page = watched.page
    page.goto(server)
    page.focus("input.md-search__input")
    page.keyboard.type("prefill")
    page.wait_for_selector(".md-search-result__item", timeout=20_000)
    hrefs = page.eval_on_selector_all(".md-search-result__item a", "links => links.map(a => a.href)")
    assert any("cap15" in h for h in hrefs), hrefs
    assert watched.errors == []


WORKERS_STARTED = """window.twWorkers = [];
const Native = window.Worker;
window.Worker = new Proxy(Native, { construct(target, args, newTarget) {
  window.twWorkers.push(String(args[0]));
  return Reflect.construct(target, args, newTarget === window.Worker ? target : newTarget);
} });"""


def test_search_index_waits_for_python_or_for_the_reader(browser, server):
    """On a widget page Material's search worker (its index build, ~0.6 s of CPU) starts once
    Python is ready, or at once when the reader opens search: not during Python's boot; nor is
    its index downloaded before then (issue 44: it shared a phone's link with the boot)."""
    context = browser.new_context(service_workers="block")
    context.route("**/pyodide/pyodide.asm.wasm", lambda route: None)  # Python's boot held, never answered
    page = context.new_page()
    page.add_init_script(WORKERS_STARTED)
    index = []
    page.on("request", lambda r: "/search/search_index.json" in r.url and index.append(r.url))
    page.goto(server + PAGE)
    page.wait_for_load_state("load")
    page.wait_for_timeout(1000)
    started = lambda: [u for u in page.evaluate("window.twWorkers") if "/workers/search." in u]  # noqa: E731
    assert page.locator(READY).count() == 0 and started() == [] and index == []
    page.focus("input.md-search__input")
    page.keyboard.type("prefill")
    page.wait_for_selector(".md-search-result__item", timeout=20_000)
    assert len(started()) == 1 and len(index) == 1
    context.close()
    context = browser.new_context(service_workers="block")
    page = context.new_page()
    page.add_init_script(WORKERS_STARTED)
    index = []
    page.on("request", lambda r: "/search/search_index.json" in r.url and index.append(r.url))
    page.goto(server + PAGE)
    page.wait_for_selector(READY, timeout=BOOT_MS)
    page.wait_for_function("() => window.twWorkers.some(u => u.includes('/workers/search.'))", timeout=5_000)
    page.wait_for_timeout(500)
    assert len(index) == 1
    page.focus("input.md-search__input")
    page.keyboard.type("prefill")
    page.wait_for_selector(".md-search-result__item", timeout=20_000)
    context.close()


TRAINING = '.tw-widget[data-widget="training"]'


def start_training(page, server, steps_seen: int) -> str:
    """Open the chapter, press "Entrena des de zero", wait for `steps_seen` steps."""
    page.goto(server + PAGE)
    page.wait_for_selector(f"{TRAINING}[data-state=ready]", timeout=BOOT_MS)
    assert page.locator(f"{TRAINING} .tw-train-start").is_enabled()
    page.click(f"{TRAINING} .tw-train-start")
    page.wait_for_function("([s, n]) => Number(document.querySelector(s).dataset.trainStep) >= n",
                           arg=[TRAINING, steps_seen], timeout=30_000)
    return TRAINING


FIXED_ON_MINI = '.tw-fixed[data-fixed="quantize.degradation_int4"]'  # prose numbers computed from the mini-GPT


@pytest.fixture
def watched_shipped(shipped_browser):
    yield from watching(shipped_browser)


def test_training_in_the_browser_reaches_the_bigram_baseline_within_a_minute(watched_shipped, server):
    """500 steps from scratch take the held-out loss from ln 90 = 4,50 nats to the bigram
    baseline's neighbourhood (the baseline: 2,38 nats on the same 8.192 held-out characters;
    Pyodide sums in another order than CPython, so its run lands a few hundredths away from
    CPython's, on either side). Timed in Chromium as shipped, not on the suite's baseline tier."""
    watched = watched_shipped
    page = watched.page
    page.goto(server + PAGE)
    fixed_before = page.eval_on_selector_all(FIXED_ON_MINI, "ss => ss.map(s => s.textContent)")
    assert fixed_before
    sel = start_training(page, server, 20)
    assert page.locator(f"{sel} .tw-train-progress").is_visible()
    page.wait_for_function("s => document.querySelector(s).dataset.trainElapsed", arg=sel, timeout=120_000)
    elapsed = float(page.get_attribute(sel, "data-train-elapsed"))
    wait_idle(page, sel)
    values = json.loads(page.get_attribute(sel, "data-values"))
    assert values["steps_trained"] == 500
    assert values["heldout_loss"] < values["bigram"] + 0.05, values
    assert values["beats_bigram"] == (values["heldout_loss"] < values["bigram"])
    assert elapsed < 60, f"in-browser training took {elapsed:.1f} s"
    assert page.get_attribute(sel, "data-train-matmul") == "wasm-simd"  # the SIMD kernel loaded in the worker
    # numbers in the prose at fixed parameters follow the new weights too, computed in the worker
    page.wait_for_function("([q, before]) => JSON.stringify([...document.querySelectorAll(q)].map(s => s.textContent)) !== before",
                           arg=[FIXED_ON_MINI, json.dumps(fixed_before, ensure_ascii=False)], timeout=90_000)
    assert watched.errors == []


def test_two_trainable_widgets_on_one_page_each_train(watched, server, site):
    page = watched.page
    pages = [p for p in book.widget_pages(site) if (site / p).read_text().count('class="tw-train"') >= 2]
    assert pages, "the fixture chapter has a page with two trainable widgets"
    for url in pages:
        page.goto(server + url)
        page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')",
                               timeout=BOOT_MS)
        trainers = page.eval_on_selector_all(".tw-widget", "ws => ws.filter(w => w.querySelector('.tw-train')).map(w => w.id)")
        for wid in trainers:
            page.click(f"#{wid} .tw-train-start")
        for wid in trainers:
            page.wait_for_function("s => document.querySelector(s).dataset.trainElapsed", arg=f"#{wid}", timeout=120_000)
            assert "Entrenat al navegador" in page.text_content(f"#{wid} .tw-train-status")
        for wid in trainers:
            wait_idle(page, f"#{wid}")
            steps = page.evaluate("s => window.tw.readParams(document.querySelector(s)).steps", f"#{wid}")
            assert json.loads(page.get_attribute(f"#{wid}", "data-values"))["steps_trained"] == steps
    assert watched.errors == []


def test_training_can_be_cancelled(watched, server):
    page = watched.page
    sel = start_training(page, server, 10)
    page.click(f"{sel} .tw-train-cancel")
    page.wait_for_function("s => document.querySelector(s + ' .tw-train-status').textContent.includes('aturat')",
                           arg=sel, timeout=20_000)
    wait_idle(page, sel)
    assert json.loads(page.get_attribute(sel, "data-values"))["steps_trained"] == 1500  # pretrained kept
    assert page.locator(f"{sel} .tw-train-start").is_enabled()


KERNEL_IDLE = "() => window.tw.kernel.get(JSON.parse(document.getElementById('tw-config').dataset.config)).pending.size === 0"


def test_a_training_belongs_to_the_page_that_started_it(watched, server):
    """Leaving the page ends its run: the next page is not streamed into, Start is free,
    and coming back and starting again runs one training, its steps in order (issue 15 §3)."""
    page = watched.page
    start_training(page, server, 10)
    page.click(".tw-twin >> nth=0")  # instant navigation to the other track
    page.wait_for_url("**/sense-formules.html*")
    page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')",
                           timeout=BOOT_MS)
    page.wait_for_function(KERNEL_IDLE, timeout=20_000)  # the old run was cancelled: no call left in the worker
    assert page.locator("[data-train-step]").count() == 0  # nothing streams into this page
    page.go_back()
    page.wait_for_url("**/cap15/")
    page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')",
                           timeout=BOOT_MS)
    page.wait_for_timeout(500)
    assert page.get_attribute(TRAINING, "data-train-step") is None
    assert page.locator(f"{TRAINING} .tw-train-start").is_enabled()
    assert page.locator(f"{TRAINING} .tw-train-cancel").is_hidden()
    page.evaluate("""s => { window.__steps = [];
        new MutationObserver(() => window.__steps.push(Number(document.querySelector(s).dataset.trainStep)))
            .observe(document.querySelector(s), { attributes: true, attributeFilter: ['data-train-step'] }); }""", TRAINING)
    page.click(f"{TRAINING} .tw-train-start")
    page.wait_for_function("s => Number(document.querySelector(s).dataset.trainStep) >= 60", arg=TRAINING, timeout=60_000)
    page.click(f"{TRAINING} .tw-train-cancel")
    page.wait_for_function(KERNEL_IDLE, timeout=20_000)
    steps = page.evaluate("window.__steps")
    assert steps == sorted(set(steps)) and steps[0] <= 10, steps  # one run: no step twice, none going back
    assert watched.errors == []


def test_a_slow_widget_keeps_the_others_answering(watched, server):
    """The clock at 15 repeats times in stages; between them other widgets run: the roofline
    answers while the clock is still busy, and the clock shows its progress meanwhile (issue 15
    §5). Both changes are made, and what follows recorded, inside the page: the whole clock run
    lasts 0.1-0.3 s here, less than a few Playwright round trips."""
    page = watched.page
    page.goto(server + PAGE)
    page.wait_for_function("() => [...document.querySelectorAll('.tw-widget')].every(w => w.dataset.state === 'ready')",
                           timeout=BOOT_MS)
    clock, roofline = '.tw-widget[data-widget="clock"]', '.tw-widget[data-widget="roofline"]'
    wait_idle(page, clock)
    wait_idle(page, roofline)
    seen = page.evaluate("""([c, r]) => new Promise((resolve) => {
      const clock = document.querySelector(c), roofline = document.querySelector(r);
      const tpot = () => roofline.querySelector('[data-value="tpot_ms"] dd').textContent;
      const before = tpot(), seen = {progress: false, answered: null};
      new MutationObserver(() => {  // the clock's stages: its status and progress bar
        if (clock.dataset.busy && !clock.querySelector('.tw-progress').hidden) seen.progress = true;
      }).observe(clock, {subtree: true, attributes: true, childList: true, characterData: true});
      new MutationObserver((_, obs) => {  // the roofline's new answer: was the clock still busy?
        if (tpot() !== before) { seen.answered = clock.dataset.busy === 'true'; obs.disconnect(); }
      }).observe(roofline, {subtree: true, childList: true, characterData: true});
      new MutationObserver((_, obs) => {
        if (!clock.dataset.busy) { obs.disconnect(); resolve(seen); }
      }).observe(clock, {attributes: true, attributeFilter: ['data-busy']});
      const repeats = clock.querySelector('[name=repeats]');
      repeats.value = repeats.max;
      repeats.dispatchEvent(new Event('input', {bubbles: true}));
      const model = roofline.querySelector('select[name=model]');
      model.value = 'mixtral-8x7b';
      model.dispatchEvent(new Event('input', {bubbles: true}));
    })""", [clock, roofline])
    assert seen["answered"] is True, f"the roofline waited for the whole clock run: {seen}"
    assert seen["progress"], "the clock showed no progress while it timed"
    wait_idle(page, roofline)
    assert_matches_cpython(page, roofline)
    page.wait_for_function("s => !document.querySelector(s).dataset.busy", arg=clock, timeout=120_000)
    assert page.locator(f"{clock} .tw-pending").count() == 0 and page.locator(f"{clock} .tw-progress").is_hidden()
    assert_matches_cpython(page, clock)
    assert watched.errors == []


def test_quantize_streams_its_formats_and_the_latest_change_wins(watched, server):
    """A change of group shows progress at once, the INT4 loss before the other formats,
    and a burst of changes ends on the last one, as CPython computes it."""
    page = watched.page
    page.goto(server + PAGE)
    sel = '.tw-widget[data-widget="quantize"]'
    page.wait_for_function("s => document.querySelector(s).dataset.state === 'ready'", arg=sel, timeout=BOOT_MS)
    wait_idle(page, sel)
    page.evaluate("""s => { const w = document.querySelector(s); window.__seen = [];
        new MutationObserver(() => window.__seen.push([w.querySelector('.tw-status').textContent,
            w.querySelector('[data-value=loss_int4]').classList.contains('tw-pending')]))
            .observe(w, { subtree: true, childList: true, characterData: true }); }""", sel)
    page.eval_on_selector(f"{sel} [name=group]", """el => { for (const i of [0, 1, 2, 0, 1]) {
        el.value = i; el.dispatchEvent(new Event('input', {bubbles: true})); } }""")
    wait_idle(page, sel)
    seen = page.evaluate("window.__seen")
    assert any(status.startswith("Calculant") for status, _ in seen)
    assert any(pending for _, pending in seen)  # the panel marked what was still to come
    assert page.locator(f"{sel} .tw-pending").count() == 0
    assert dom_params(page, sel)["group"] == 16
    assert_matches_cpython(page, sel)
    assert watched.errors == []


def test_a_calculator_answers_before_the_model_data_is_in_and_a_model_widget_once_it_is(watched, server):
    """The model data (bundle.MODEL_DATA: weights, corpus, kernel) is a wheel apart, fetched
    after the calculators are interactive (issue 44). Its response held back: a calculator is
    ready and answers a change, while a model widget shows its prerendered figure and says it
    is loading the model, its controls off; let through, the model widget answers too."""
    page = watched.page
    held = []
    page.context.route("**/widgets_py_models-*.zip", lambda route: held.append(route))
    page.goto(server + PAGE)
    calculator, model = '.tw-widget[data-widget="kv_cache"]', '.tw-widget[data-widget="quantize"]'
    page.wait_for_selector(f'{calculator}[data-state="ready"]', timeout=BOOT_MS)
    prerendered = page.inner_html(f"{model} .tw-figure")
    assert move_a_control(page, calculator)
    assert_matches_cpython(page, calculator)
    for _ in range(100):  # the page asks for the model data once idle, at the latest
        if held:
            break
        page.wait_for_timeout(100)
    assert len(held) == 1, "the model data is asked for once the calculators are interactive"
    assert page.get_attribute(model, "data-state") == "loading"
    assert "Carregant el model" in page.text_content(f"{model} .tw-status")
    assert page.is_disabled(f"{model} .tw-controls [name]:not([type=hidden]) >> nth=0")
    assert page.inner_html(f"{model} .tw-figure") == prerendered
    held[0].continue_()
    page.wait_for_selector(f'{model}[data-state="ready"]', timeout=60_000)
    assert move_a_control(page, model)
    assert_matches_cpython(page, model)
    assert watched.errors == []


def test_the_first_calculator_answers_while_the_others_own_packages_are_held(watched, server):
    """Each calculator's own package (build_hooks/runtime/placement.py): the page's first comes
    with the boot; the others' are asked for once it is live, each widget interactive when its
    own is in (issue 44). Held back, the others load while the first answers a change; let
    through, they answer too."""
    page = watched.page
    held = []
    first = '.tw-widget[data-widget="roofline"]'  # the page's first calculator
    page.context.route("**/widgets_py_widget_*.tar.bz2",
                       lambda route: route.continue_() if "_roofline-" in route.request.url else held.append(route))
    page.goto(server + PAGE)
    page.wait_for_selector(f'{first}[data-state="ready"]', timeout=BOOT_MS)
    others = page.eval_on_selector_all('.tw-widget:not([data-models])', "ws => ws.map(w => [w.dataset.widget, w.dataset.state])")
    assert [name for name, _ in others][0] == "roofline" and len(others) > 2
    assert all(state == "loading" for name, state in others if name != "roofline"), others
    assert move_a_control(page, first)
    assert_matches_cpython(page, first)
    for _ in range(100):  # the page asks for all its others at once, once the first is live
        if len(held) == len(others) - 1:
            break
        page.wait_for_timeout(100)
    assert sorted(r.request.url.split("/widgets_py_widget_")[1].split("-")[0] for r in held) == \
        sorted(name for name, _ in others if name != "roofline")
    assert all(state == "loading" for name, state in page.eval_on_selector_all(
        '.tw-widget:not([data-models])', "ws => ws.map(w => [w.dataset.widget, w.dataset.state])") if name != "roofline")
    for route in held:
        route.continue_()
    page.wait_for_function("() => [...document.querySelectorAll('.tw-widget:not([data-models])')].every(w => w.dataset.state === 'ready')",
                           timeout=60_000)
    sel = '.tw-widget[data-widget="kv_cache"]'
    assert move_a_control(page, sel)
    assert_matches_cpython(page, sel)
    assert watched.errors == []
