// The review page: keyboard first, every text written with textContent (an answer's HTML is never run).
"use strict";
(() => {
  const token = new URLSearchParams(window.location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  let current = null; // the task id on screen
  let busy = false;   // one request at a time: a key held down votes once

  async function api(method, path, body) {
    const init = { method, headers: { Authorization: "Bearer " + token }, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const reply = await fetch(path, init);
    let data = null;
    try { data = await reply.json(); } catch (err) { data = null; }
    if (!reply.ok) throw new Error((data && data.error) || ("the server answered " + reply.status));
    return data;
  }

  function say(text) { $("message").textContent = text; }

  function showProgress(progress) {
    if (!progress) return;
    const bar = $("bar");
    bar.max = Math.max(1, progress.total);
    bar.value = progress.done;
    $("count").textContent = progress.done + " / " + progress.total;
  }

  function render(next) {
    showProgress(next.progress);
    current = next.task;
    const done = next.task === null;
    $("task").hidden = done;
    $("done").hidden = !done;
    if (!done) {
      $("prompt").textContent = next.prompt;
      $("response_1").textContent = next.response_1;
      $("response_2").textContent = next.response_2;
      window.scrollTo(0, 0);
    }
    document.body.dataset.task = done ? "" : next.task;
    document.body.dataset.state = done ? "done" : "task";
  }

  async function load() {
    render(await api("GET", "/api/next"));
  }

  async function act(work, message) {
    if (busy) return;
    busy = true;
    document.body.dataset.busy = "1";
    try {
      await work();
      say(message);
      await load();
    } catch (err) {
      say("Not saved: " + err.message);
    } finally {
      busy = false;
      delete document.body.dataset.busy;
    }
  }

  const NAMES = { "1": "Response 1", "2": "Response 2", tie: "a tie", both_bad: "both bad" };

  function vote(choice) {
    if (current === null) return;
    const task = current;
    act(() => api("POST", "/api/vote", { task, choice }), "Saved: " + NAMES[choice] + ".");
  }

  function undo() {
    act(async () => {
      const reply = await api("POST", "/api/undo", {});
      if (!reply.undone) throw new Error("there is no vote to undo");
    }, "Undone: vote again on this pair.");
  }

  function toggleHelp() { $("help").hidden = !$("help").hidden; }

  const KEYS = { "1": () => vote("1"), "2": () => vote("2"), t: () => vote("tie"), b: () => vote("both_bad"),
                 u: undo, "?": toggleHelp };

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const run = KEYS[event.key.length === 1 ? event.key.toLowerCase() : event.key];
    if (!run) return;
    event.preventDefault();
    run();
  });

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (!button) return;
    if (button.dataset.choice) vote(button.dataset.choice);
    else if (button.dataset.action === "undo") undo();
    else if (button.dataset.action === "help") toggleHelp();
  });

  load().catch((err) => {
    document.body.dataset.state = "error";
    say("Cannot load the next pair: " + err.message);
  });
})();
