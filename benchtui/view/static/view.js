// benchtui view: filtering the sessions table, and keeping an open page of a running campaign
// up to date. The same file for every run: it builds nothing from run data as markup (rows are
// shown or hidden; a live update swaps in elements the server rendered and escaped).
"use strict";

function filterRows() {
  const form = document.getElementById("filters");
  const rows = document.querySelectorAll("#rows tr");
  if (!form) return;
  const value = (name) => form.elements[name].value.trim();
  const model = value("model"), state = value("state");
  const task = value("task").toLowerCase(), why = value("why").toLowerCase();
  const cost = parseFloat(value("cost")), attempt = parseInt(value("attempt"), 10);
  const bug = form.elements.bug.checked;
  let shown = 0;
  for (const row of rows) {
    const d = row.dataset;
    const keep = (!model || d.model === model) && (!state || d.state === state) &&
      (!task || d.task.toLowerCase().includes(task)) && (!why || d.why.toLowerCase().includes(why)) &&
      (isNaN(cost) || parseFloat(d.cost) >= cost) && (isNaN(attempt) || parseInt(d.attempt, 10) >= attempt) &&
      (!bug || d.bug === "1");
    row.classList.toggle("hidden", !keep);
    if (keep) shown += 1;
  }
  const count = document.getElementById("shown-count");
  if (count) count.textContent = `${shown} of ${rows.length} sessions`;
}

function setUpFilters() {
  const form = document.getElementById("filters");
  if (!form) return;
  const params = new URLSearchParams(window.location.search);
  for (const [name, value] of params) {
    const field = form.elements[name];
    if (!field) continue;
    if (field.type === "checkbox") field.checked = value === "1";
    else field.value = value;
  }
  form.addEventListener("input", filterRows);
  form.addEventListener("submit", (event) => event.preventDefault());
  filterRows();
}

// Live: ask the server whether this page changed (it answers 304 while the run stands still),
// and swap in the parts that did. Only over http: an export opened from disk is a snapshot.
async function refresh(etag) {
  const answer = await fetch(window.location.href, {
    headers: etag ? { "If-None-Match": etag } : {}, cache: "no-store", credentials: "same-origin",
  });
  if (answer.status !== 200) return etag;
  const html = await answer.text();
  const fresh = new DOMParser().parseFromString(html, "text/html");
  const following = window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;
  for (const part of document.querySelectorAll("[data-live-part]")) {
    const replacement = part.id && fresh.getElementById(part.id);
    if (replacement) part.replaceWith(document.importNode(replacement, true));
  }
  if (!fresh.body.dataset.live) {
    delete document.body.dataset.live;  // the run ended: nothing more will change
  }
  filterRows();
  if (following) window.scrollTo(0, document.body.scrollHeight);
  return answer.headers.get("ETag") || "";
}

function setUpLive() {
  const every = parseInt(document.body.dataset.live || "0", 10);
  if (!every || !window.location.protocol.startsWith("http")) return;
  let etag = "";
  const state = document.getElementById("live-state");
  const tick = async () => {
    try {
      etag = await refresh(etag);
      if (state) state.textContent = document.body.dataset.live ? "live" : "the run has stopped";
    } catch (error) {
      if (state) state.textContent = "the viewer is not answering";
    }
    if (document.body.dataset.live) window.setTimeout(tick, every);
  };
  window.setTimeout(tick, every);
}

document.addEventListener("DOMContentLoaded", () => {
  setUpFilters();
  setUpLive();
});
