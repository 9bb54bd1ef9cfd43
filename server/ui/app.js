/* app.js - the page's behaviour, plain browser JavaScript (no framework, no
 * build step). Lists the ready models (GET /v2/models/stats, which works
 * without model control), sends the chosen, dropped or pasted images as one
 * multipart batch to POST /v2/models/{name}/classify, draws each image beside
 * its top-5 labels and the server's timings, and polls /metrics every 2 s for
 * the live panel. It only reads, apart from classify: no model control here.
 * Text from the server is always set as text, never parsed as HTML. */
"use strict";

const TOP_K = 5;
const POLL_MS = 2000;

const $ = (id) => document.getElementById(id);

/* A new element: attributes, then children (strings become text nodes). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

/* The server's own message for a failed answer ({"error": "..."}). */
function serverMessage(resp, body) {
  if (body && typeof body.error === "string") return body.error;
  return `HTTP ${resp.status} ${resp.statusText}`.trim();
}

async function getJSON(path) {
  const resp = await fetch(path, { cache: "no-store" });
  const body = await resp.json().catch(() => null);
  if (!resp.ok || !body) throw new Error(serverMessage(resp, body));
  return body;
}

function showError(msg) {
  $("error").textContent = msg;
  $("error").hidden = !msg;
}

/* Tiny probabilities still say they are not zero. */
function formatScore(p) {
  return p > 0 && p < 0.001 ? "<0.1%" : `${(p * 100).toFixed(1)}%`;
}

function formatUs(us) {
  if (!Number.isFinite(us)) return "–";
  return us < 1000 ? `${Math.round(us)} µs` : `${(us / 1000).toFixed(us < 10000 ? 2 : 1)} ms`;
}

/* ------------------------------------------------------------ models */

async function loadServerInfo() {
  try {
    const m = await getJSON("/v2");
    $("server-info").textContent = `version ${m.version} · ${m.backend} backend`;
  } catch (e) {
    $("server-info").textContent = `server unreachable: ${e.message}`;
  }
}

async function loadModels() {
  const select = $("model");
  try {
    const stats = await getJSON("/v2/models/stats");
    const names = (stats.model_stats || []).map((s) => s.name);
    if (names.length) {
      select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
    } else {
      select.replaceChildren(el("option", { value: "" }, "no model is ready"));
    }
    select.disabled = names.length === 0;
    describeModel();
  } catch (e) {
    select.replaceChildren(el("option", { value: "" }, "unavailable"));
    showError(`Cannot list the models: ${e.message}`);
  }
}

/* The input size and batch limit, from the model's Triton-style config. */
async function describeModel() {
  const name = $("model").value;
  $("model-info").textContent = "";
  if (!name) return;
  try {
    const cfg = await getJSON(`/v2/models/${encodeURIComponent(name)}/config`);
    const dims = (cfg.input && cfg.input[0] && cfg.input[0].dims) || [];
    $("model-info").textContent =
      `input ${dims.join("×")} · up to ${cfg.max_batch_size} images per request`;
  } catch (e) {
    $("model-info").textContent = e.message;
  }
}

/* ------------------------------------------------------------ classify */

let objectUrls = [];
let latestRequest = 0;

async function classify(files) {
  if (!files.length) return;
  const model = $("model").value;
  if (!model) {
    showError("No model is ready to classify with.");
    return;
  }
  const id = ++latestRequest;
  const plural = files.length === 1 ? "image" : "images";
  showError("");
  $("status").textContent = `Classifying ${files.length} ${plural} with ${model}…`;
  const form = new FormData();
  files.forEach((f, i) => form.append("image", f, f.name || `pasted-${i + 1}.png`));
  let resp, body;
  try {
    resp = await fetch(`/v2/models/${encodeURIComponent(model)}/classify?top_k=${TOP_K}`,
                       { method: "POST", body: form });
    body = await resp.json().catch(() => null);
  } catch (e) {
    body = { error: `Cannot reach the server: ${e.message}` };
  }
  if (id !== latestRequest) return; /* a newer batch was sent meanwhile */
  if (!resp || !resp.ok || !body || !Array.isArray(body.results)) {
    $("status").textContent = "";
    showError(resp ? serverMessage(resp, body) : body.error);
    return;
  }
  showResults(files, body.results);
  $("status").textContent = `${files.length} ${plural} classified by ${body.model_name}.`;
}

function showResults(files, results) {
  for (const url of objectUrls) URL.revokeObjectURL(url);
  objectUrls = files.map((f) => URL.createObjectURL(f));
  $("results").replaceChildren(...results.map((r, i) =>
    resultCard(files[i].name || `pasted image ${i + 1}`, objectUrls[i], r)));
}

function resultCard(name, url, result) {
  const rows = result.predictions.map((p) => {
    const fill = el("span");
    fill.style.width = `${(p.score * 100).toFixed(1)}%`;
    return el("li", {},
      el("span", { class: "label" }, p.label),
      el("span", { class: "bar", "aria-hidden": "true" }, fill),
      el("span", { class: "score" }, formatScore(p.score)));
  });
  const t = result.timing_us || {};
  return el("article", { class: "result" },
    el("img", { src: url, alt: name }),
    el("div", {},
      el("h3", {}, name),
      el("ol", { class: "preds", "aria-label": `top ${rows.length} labels` }, ...rows),
      el("p", { class: "timing" },
        `queue ${formatUs(t.queue)} · compute ${formatUs(t.compute)} · total ${formatUs(t.total)}`)));
}

function setupInput() {
  const drop = $("drop"), input = $("file");
  drop.addEventListener("click", () => input.click());
  input.addEventListener("change", () => {
    classify([...input.files]);
    input.value = ""; /* choosing the same file again still fires "change" */
  });
  /* Drops anywhere on the page count; without this the browser would
   * navigate away to show a file dropped beside the zone. */
  document.addEventListener("dragover", (e) => {
    e.preventDefault();
    drop.classList.add("over");
  });
  document.addEventListener("dragleave", (e) => {
    if (!e.relatedTarget) drop.classList.remove("over");
  });
  document.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    classify([...e.dataTransfer.files]);
  });
  document.addEventListener("paste", (e) => {
    const files = [...(e.clipboardData ? e.clipboardData.files : [])]
      .filter((f) => f.type.startsWith("image/"));
    if (files.length) {
      e.preventDefault();
      classify(files);
    }
  });
  $("model").addEventListener("change", describeModel);
}

/* ------------------------------------------------------------ live panel */

/* Prometheus text into [{name, labels, value}]. */
function parseMetrics(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

const sumOf = (samples, name) =>
  samples.filter((s) => s.name === name).reduce((a, s) => a + s.value, 0);

/* A histogram's cumulative buckets summed over every model: [[le, count]]. */
function histogram(samples, name) {
  const byBound = new Map();
  for (const s of samples) {
    if (s.name !== `${name}_bucket`) continue;
    const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
    byBound.set(le, (byBound.get(le) || 0) + s.value);
  }
  return [...byBound].sort((a, b) => a[0] - b[0]);
}

/* As Prometheus' histogram_quantile: linear within the bucket holding the
 * rank; past the last finite bound, that bound. */
function quantile(buckets, q) {
  const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
  if (!total) return NaN;
  const rank = q * total;
  let lower = 0, below = 0;
  for (const [le, cum] of buckets) {
    if (cum >= rank) {
      if (le === Infinity) return lower;
      return lower + (le - lower) * (cum > below ? (rank - below) / (cum - below) : 0);
    }
    lower = le;
    below = cum;
  }
  return lower;
}

/* Batch sizes are integers: the bucket "le=8" after "le=4" holds 5 to 8. */
function showBatchSizes(buckets) {
  const rows = [];
  let lower = 0, below = 0;
  for (const [le, cum] of buckets) {
    const n = cum - below;
    if (n > 0) {
      const range = le === Infinity ? `>${lower}` : le - lower > 1 ? `${lower + 1}–${le}` : `${le}`;
      rows.push([range, n]);
    }
    lower = le;
    below = cum;
  }
  const most = Math.max(1, ...rows.map((r) => r[1]));
  $("m-batch").replaceChildren(...(rows.length ? rows.map(([range, n]) => {
    const fill = el("span");
    fill.style.width = `${(100 * n / most).toFixed(1)}%`;
    return el("li", {}, el("span", {}, range),
      el("span", { class: "bar", "aria-hidden": "true" }, fill),
      el("span", { class: "count" }, String(n)));
  }) : [el("li", { class: "muted" }, "no batches yet")]));
}

function showGpu(samples) {
  const used = sumOf(samples, "nv_gpu_memory_used_bytes");
  const total = sumOf(samples, "nv_gpu_memory_total_bytes");
  const util = samples.filter((s) => s.name === "nv_gpu_utilization");
  const present = total > 0;
  for (const node of document.querySelectorAll(".gpu")) node.hidden = !present;
  if (!present) return;
  const gib = (b) => (b / 2 ** 30).toFixed(1);
  $("m-gpu-mem").textContent = `${gib(used)} / ${gib(total)} GiB`;
  $("m-gpu-util").textContent = util.length
    ? `${Math.round(100 * util.reduce((a, s) => a + s.value, 0) / util.length)}%` : "–";
}

let previous = null; /* {time, count} of the last poll, for the rate */

async function pollMetrics() {
  try {
    const resp = await fetch("/metrics", { cache: "no-store" });
    if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
    const samples = parseMetrics(await resp.text());
    const ok = sumOf(samples, "nv_inference_request_success");
    const failed = sumOf(samples, "nv_inference_request_failure");
    const now = performance.now();
    $("m-requests").textContent = failed ? `${ok} ok, ${failed} failed` : String(ok);
    $("m-images").textContent = String(sumOf(samples, "nv_inference_count"));
    if (previous) {
      const rate = (ok + failed - previous.count) / ((now - previous.time) / 1000);
      $("m-rps").textContent = rate.toFixed(rate < 10 ? 1 : 0);
    }
    previous = { time: now, count: ok + failed };
    const latency = histogram(samples, "inferd_request_duration_us");
    $("m-p50").textContent = formatUs(quantile(latency, 0.5));
    $("m-p99").textContent = formatUs(quantile(latency, 0.99));
    $("m-queue").textContent = String(sumOf(samples, "nv_inference_pending_request_count"));
    showBatchSizes(histogram(samples, "inferd_batch_size"));
    showGpu(samples);
    $("m-error").hidden = true;
  } catch (e) {
    $("m-error").textContent = `metrics unavailable: ${e.message}`;
    $("m-error").hidden = false;
  }
  setTimeout(pollMetrics, POLL_MS);
}

setupInput();
loadServerInfo();
loadModels();
pollMetrics();
