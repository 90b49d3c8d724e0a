// Web Worker: boots Pyodide + numpy + widgets_py once, then runs widgets on request.
// Protocol (after Pyodide's docs/usage/webworker.md and stlite's worker runtime):
//   host -> worker  {type: "init", root, pyodide, bundle: {name, sha256}}
//                   {type: "run", id, widget, params}
//                   {type: "train", id, params} | {type: "train:cancel"}
//   worker -> host  {type: "event:progress", message, fraction}
//                   {type: "event:loaded"} | {type: "event:error", message}
//                   {type: "result", id, ok, data | error}
//                   {type: "train:progress" | "train:done", id, data}
//                   {type: "train:cancelled" | "train:error", id, error?}
"use strict";

let render = null;
let Trainer = null;
let booted = null;
let cancelTraining = false;

const post = (type, extra = {}) => self.postMessage({ type, ...extra });
const progress = (message, fraction) => post("event:progress", { message, fraction });

const INSTALL = (sha256) => `
import hashlib, sys, zipfile
data = open("/tmp/widgets_py.zip", "rb").read()
got = hashlib.sha256(data).hexdigest()
if got != "${sha256}":
    raise RuntimeError(f"widgets_py: sha256 {got}, s'esperava ${sha256}")
zipfile.ZipFile("/tmp/widgets_py.zip").extractall("/home/pyodide/tw")
sys.path.insert(0, "/home/pyodide/tw")
import numpy, widgets_py.browser
`;

async function boot({ root, pyodide, bundle }) {
  const base = new URL(pyodide, root).href;
  progress("Carregant l'intèrpret de Python…", 0.05);
  importScripts(base + "pyodide.js");
  const py = await self.loadPyodide({ indexURL: base, stdout: () => {}, stderr: () => {} });
  progress("Carregant numpy…", 0.6);
  const failures = [];
  await py.loadPackage("numpy", { messageCallback: () => {}, errorCallback: (m) => failures.push(m) });
  if (failures.length) throw new Error(`numpy: ${failures.join("; ")}`);
  progress("Carregant els widgets…", 0.85);
  const response = await fetch(new URL("assets/tw/" + bundle.name, root));
  if (!response.ok) throw new Error(`${bundle.name}: HTTP ${response.status}`);
  py.FS.writeFile("/tmp/widgets_py.zip", new Uint8Array(await response.arrayBuffer()));
  py.runPython(INSTALL(bundle.sha256));
  const browser = py.pyimport("widgets_py.browser");
  render = browser.render;
  Trainer = browser.Trainer;
  progress("A punt.", 1);
  post("event:loaded");
}

function lastLine(error) {
  const lines = String(error && error.message ? error.message : error).trim().split("\n");
  return lines[lines.length - 1];
}

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.type === "init") {
    booted = boot(msg).then(
      () => true,
      (error) => {
        post("event:error", { message: lastLine(error) });
        return false;
      },
    );
    return;
  }
  if (msg.type === "train:cancel") {
    cancelTraining = true;
    return;
  }
  if (msg.type === "train") {
    if (!(await booted)) return;
    cancelTraining = false;
    let trainer = null;
    try {
      trainer = Trainer(JSON.stringify(msg.params));
      for (;;) {
        const data = JSON.parse(trainer.advance(5));
        post(data.done ? "train:done" : "train:progress", { id: msg.id, data });
        if (data.done) break;
        await new Promise((resolve) => setTimeout(resolve, 0)); // let cancels and widget runs in
        if (cancelTraining) {
          post("train:cancelled", { id: msg.id });
          break;
        }
      }
    } catch (error) {
      post("train:error", { id: msg.id, error: lastLine(error) });
    } finally {
      if (trainer) trainer.destroy();
    }
    return;
  }
  if (msg.type === "run") {
    if (!(await booted)) return; // the failure was already reported as event:error
    try {
      const data = JSON.parse(render(msg.widget, JSON.stringify(msg.params)));
      post("result", { id: msg.id, ok: true, data });
    } catch (error) {
      post("result", { id: msg.id, ok: false, error: lastLine(error) });
    }
  }
};
