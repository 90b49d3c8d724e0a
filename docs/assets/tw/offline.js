// Registers the service worker that build_hooks/offline.py writes (not under mkdocs serve).
(() => {
  "use strict";
  if (!("serviceWorker" in navigator) || !location.protocol.startsWith("http")) return;
  if (!document.querySelector('meta[name="tw-sw"]')) return;
  const url = new URL("../../sw.js", document.currentScript.src); // this file is assets/tw/offline.js
  const register = () => navigator.serviceWorker.register(url).catch(() => {}); // online works without it
  // Precaching competes with Python's first boot for the network and the CPU: wait until the
  // page's widgets are interactive (host.js says "tw:idle"), or for the load event without widgets.
  if (document.querySelector(".tw-widget")) {
    document.addEventListener("tw:idle", register, { once: true });
    setTimeout(register, 60000); // a page whose widgets never boot still gets its offline copy
  } else if (document.readyState === "complete") register();
  else window.addEventListener("load", register, { once: true });
})();
