// The play page: polls the server's state, shows turns, sends the person's choices.
// Every text from the data or the run is set with textContent: nothing here parses HTML.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const $ = (id) => document.getElementById(id);
let version = -1;
let latest = null;
let screen = "intro";
let current = null;
let shownFinished = null;
let busy = false;
let closed = false;

function el(tag, className, content) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (content !== undefined && content !== null) node.textContent = String(content);
  return node;
}

function imageUrl(path) {
  return path + "?token=" + encodeURIComponent(token);
}

async function api(path, body) {
  const options = { headers: { "X-Token": token }, cache: "no-store" };
  if (body !== undefined) {
    options.method = "POST";
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json();
  if (!response.ok) {
    const error = new Error(data.error || response.statusText);
    error.status = response.status; // 403: this page's token is not the session's
    throw error;
  }
  return data;
}

function show(name) {
  for (const section of document.querySelectorAll("section.screen")) {
    section.hidden = section.id !== name;
  }
  screen = name;
  document.body.dataset.screen = name;
}

function problem(node, message) {
  node.textContent = message || "";
  node.hidden = !message;
}

function renderProgress(state) {
  $("annotator").textContent = state.annotator;
  const box = $("progress");
  box.replaceChildren();
  let done = 0;
  let total = 0;
  for (const part of state.progress) {
    done += part.done;
    total += part.total;
    const row = el("div", "bar");
    row.dataset.scenario = part.scenario;
    const meter = el("progress");
    meter.max = Math.max(part.total, 1);
    meter.value = part.done;
    row.append(el("span", "name", part.scenario), meter, el("span", "count", `${part.done}/${part.total}`));
    box.append(row);
  }
  $("overall").textContent = `${done} of ${total} episodes done`;
}

function optionList(options) {
  return options.map((o) => `${o.letter}. ${o.text}`).join("\n");
}

function renderHistory(turn) {
  const box = $("history");
  box.replaceChildren();
  for (const earlier of turn.history) {
    const card = el("div", "earlier");
    const image = el("img");
    image.src = imageUrl(earlier.image);
    image.alt = `turn ${earlier.turn}`;
    card.append(el("div", null, `turn ${earlier.turn}`), image, el("p", "prompt", earlier.prompt));
    card.append(el("pre", null, optionList(earlier.options)), el("div", null, `you answered ${earlier.answer}`));
    box.append(card);
  }
}

function renderTurn(turn) {
  current = turn;
  busy = false;
  document.body.dataset.turn = turn.id;
  $("where").textContent = `${turn.scenario} · sample ${turn.sample_id} · turn ${turn.turn} of at most ${turn.max_turns}`;
  $("image").src = imageUrl(turn.image);
  $("prompt").textContent = turn.prompt;
  const list = $("options");
  list.replaceChildren();
  for (const option of turn.options) {
    const button = el("button", "option");
    button.type = "button";
    button.dataset.letter = option.letter;
    button.append(el("kbd", null, option.letter), el("span", "text", option.text));
    button.addEventListener("click", () => choose(option.letter));
    list.append(button);
  }
  renderHistory(turn);
  problem($("problem"), "");
  show("turn");
  api("/api/seen", { turn: turn.id }).catch(() => {});
}

function renderVerdict(last) {
  $("verdict-title").textContent = last.correct ? "Correct" : "Not correct";
  const turns = last.num_turns === 1 ? "1 turn" : `${last.num_turns} turns`;
  $("verdict-detail").textContent = `${last.scenario} sample ${last.sample_id}: ${turns}, ended: ${last.end_reason || "?"}`;
  const list = $("verdict-turns");
  list.replaceChildren();
  for (const turn of last.turns) {
    list.append(el("li", null, `turn ${turn.turn}: you answered ${turn.answer}, ${turn.verdict}`));
  }
  show("verdict");
}

function cell(value, digits) {
  if (value === undefined || value === null) return el("td", null, "–");
  return el("td", null, typeof value === "number" && digits !== undefined ? value.toFixed(digits) : value);
}

function renderSummary(summary) {
  const body = document.querySelector("#summary-table tbody");
  body.replaceChildren();
  for (const [name, score] of Object.entries(summary.scenarios || {})) {
    const row = el("tr");
    row.append(el("td", null, name), cell(score.n), cell(score.accuracy, 1), cell(score.ps_rate, 2));
    body.append(row);
  }
  show("summary");
}

function apply(state) {
  latest = state;
  version = state.version;
  renderProgress(state);
  if (shownFinished === null) shownFinished = state.finished;
  if (state.resumed) {
    problem($("resumed"), `${state.resumed} episodes done already, continuing; an episode left unfinished starts again from its first turn.`);
  }
  if (closed || screen === "intro" || screen === "verdict" || screen === "summary") return;
  if (state.finished > shownFinished && state.last) {
    shownFinished = state.finished;
    renderVerdict(state.last);
  } else if (state.turn) {
    if (!current || current.id !== state.turn.id || screen !== "turn") renderTurn(state.turn);
  } else if (state.summary) {
    renderSummary(state.summary);
  } else {
    show("waiting");
  }
}

function proceed() {
  show("waiting");
  if (latest) apply(latest);
}

async function choose(letter) {
  if (busy || screen !== "turn" || !current) return;
  busy = true;
  const chosen = document.querySelector(`.option[data-letter="${letter}"]`);
  if (chosen) chosen.classList.add("chosen");
  const answered = current.id;
  try {
    await api("/api/answer", { turn: answered, letter });
    // The next turn (or the verdict) may be shown already: leave it.
    if (screen === "turn" && current && current.id === answered) show("waiting");
  } catch (error) {
    busy = false;
    problem($("problem"), error.message);
  }
}

async function finish() {
  closed = true;
  show("stopped");
  await api("/api/quit", {}).catch(() => {});
}

async function loop() {
  while (!closed) {
    try {
      apply(await api(`/api/state?since=${version}`));
      problem($("error"), "");
    } catch (error) {
      if (error.status === 403) {
        // The server answers, but not to this page: it was restarted (a new session, a new
        // token) or the URL is wrong. Polling again would never succeed: say what to open.
        closed = true;
        problem($("error"), "");
        show("refused");
        return;
      }
      problem($("error"), `the server does not answer (${error.message}); finished episodes are saved`);
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
}

document.addEventListener("keydown", (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "Enter") {
    if (screen === "intro" || screen === "verdict") { event.preventDefault(); proceed(); }
    else if (screen === "summary") { event.preventDefault(); finish(); }
    return;
  }
  if (screen === "turn" && /^[a-z]$/i.test(event.key) && current) {
    const letter = event.key.toUpperCase();
    if (current.options.some((o) => o.letter === letter)) { event.preventDefault(); choose(letter); }
  }
});

$("start").addEventListener("click", proceed);
$("continue").addEventListener("click", proceed);
$("finish").addEventListener("click", finish);
loop();
