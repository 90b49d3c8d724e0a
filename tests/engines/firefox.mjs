// Firefox ESR for tests/engines.py: puppeteer-core over WebDriver BiDi, driving the firefox-esr
// on PATH (no browser download). A line of JSON in, a line of JSON out:
//   in  {"id": 1, "cmd": "goto" | "reload" | "eval" | "errors" | "close", "url"?, "code"?}
//   out {"id": 1, "ok": value} | {"id": 1, "error": "..."}
// Launch options come as one JSON argument: {"executablePath", "proxy": "127.0.0.1:PORT"}.
// Console errors and uncaught page errors are collected from the start (errors: all so far).
import puppeteer from "puppeteer-core";
import readline from "node:readline";

const options = JSON.parse(process.argv[2]);
const [proxyHost, proxyPort] = options.proxy.split(":");
const browser = await puppeteer.launch({
  browser: "firefox",
  executablePath: options.executablePath,
  headless: true,
  protocolTimeout: 300_000,
  extraPrefsFirefox: {
    // every request that leaves 127.0.0.1 goes to the test's recording proxy (tests/engines.py)
    "network.proxy.type": 1,
    "network.proxy.http": proxyHost,
    "network.proxy.http_port": Number(proxyPort),
    "network.proxy.ssl": proxyHost,
    "network.proxy.ssl_port": Number(proxyPort),
    "network.proxy.no_proxies_on": "127.0.0.1",
    "network.proxy.allow_hijacking_localhost": false,
    // the browser's own traffic (remote settings, updates, safe browsing, connectivity checks)
    // is not the page's: pointed at a closed loopback port, it never reaches the proxy
    "services.settings.server": "http://127.0.0.1:9/",
    "network.connectivity-service.enabled": false,
    "network.captive-portal-service.enabled": false,
    "browser.safebrowsing.downloads.remote.enabled": false,
    "browser.safebrowsing.provider.mozilla.updateURL": "",
    "browser.safebrowsing.update.enabled": false,
    "app.update.disabledForTesting": true,
    "extensions.update.enabled": false,
    "extensions.getAddons.cache.enabled": false,
    "datareporting.policy.dataSubmissionEnabled": false,
    "toolkit.telemetry.enabled": false,
    "network.dns.disablePrefetch": true,
    "network.prefetch-next": false,
  },
});
const page = (await browser.pages())[0] || (await browser.newPage());
const errors = [];
const where = () => page.url().slice(0, 120); // the page a message came from, as it ends up in a test's failure
page.on("console", (m) => m.type() === "error" && errors.push(`${m.text()} (${(m.location() && m.location().url) || where()})`));
page.on("pageerror", (e) => errors.push(`${String(e && e.message ? e.message : e)} (${where()})`));

const commands = {
  goto: async ({ url }) => void (await page.goto(url, { waitUntil: "load", timeout: 120_000 })),
  reload: async () => void (await page.reload({ waitUntil: "load", timeout: 120_000 })),
  eval: async ({ code }) => page.evaluate(code),
  errors: async () => errors.slice(),
  close: async () => {
    await browser.close();
    process.exit(0);
  },
};

process.stdout.write(JSON.stringify({ id: 0, ok: await browser.version() }) + "\n");
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const msg = JSON.parse(line);
  try {
    const value = await commands[msg.cmd](msg);
    process.stdout.write(JSON.stringify({ id: msg.id, ok: value === undefined ? null : value }) + "\n");
  } catch (error) {
    process.stdout.write(JSON.stringify({ id: msg.id, error: String(error && error.message ? error.message : error) }) + "\n");
  }
}
await browser.close();
