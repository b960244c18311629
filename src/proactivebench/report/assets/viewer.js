// The episode viewer of the report. Episodes live in <script type="application/json"> blocks,
// one per run and scenario, parsed only when a scenario's section comes into view, and drawn a
// page at a time. Every model- or data-provided string goes through textContent, never HTML.
"use strict";
// A table wider than its box gets the class "scrolls", which shows its scroll cue
// (report.css): its columns past the right edge are reached by scrolling inside its box.
(function () {
  function mark() {
    for (const figure of document.querySelectorAll("figure.table")) {
      const scroller = figure.querySelector(".scroller");
      if (scroller) figure.classList.toggle("scrolls", scroller.scrollWidth > scroller.clientWidth);
    }
  }
  mark();
  window.addEventListener("resize", mark);
  window.addEventListener("load", mark);
})();
(function () {
  const PAGE = 20;
  const parsed = new Map();
  function block(id) {
    if (!parsed.has(id)) {
      const node = document.getElementById(id);
      parsed.set(id, node ? JSON.parse(node.textContent) : null);
    }
    return parsed.get(id);
  }
  const index = block("viewer-index");
  if (!index) return;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function thumb(images, id) {
    const url = id === null || id === undefined || !images ? null : images[id];
    if (typeof url === "string" && /^data:image\/(webp|jpeg);base64,/.test(url)) {
      const img = el("img");
      img.loading = "lazy";
      img.alt = "view shown to the model";
      img.src = url;
      return img;
    }
    return el("div", "noimg", "image not available");
  }

  function turnCard(section, images, turn, keyText, sentBefore) {
    // turn: [view, prompt, options, chosen, answer, read_as, verdict, action, reason, number]
    const [view, prompt, options, chosen, answer, readAs, verdict, action, reason, number] = turn;
    const card = el("div", "turn" + (sentBefore ? " sent-before" : ""));
    card.appendChild(thumb(images, view));
    const head = el("div");
    head.appendChild(el("strong", null, "turn " + number + " "));
    head.appendChild(el("span", "badge " + verdict, verdict));
    card.appendChild(head);
    card.appendChild(el("div", null, section.texts[prompt]));
    const list = el("ol");
    section.options[options].forEach(function (text, i) {
      const item = el("li", null, String.fromCharCode(65 + i) + ". " + section.texts[text]);
      if (i === chosen) item.classList.add("chosen");
      if (keyText !== null && section.texts[text] === keyText) item.classList.add("key");
      list.appendChild(item);
    });
    card.appendChild(list);
    card.appendChild(el("div", "muted", "answer:"));
    card.appendChild(el("pre", "answer", answer));
    if (readAs !== null) {
      card.appendChild(el("div", "muted", "read as:"));
      card.appendChild(el("pre", "read-as", readAs));
    }
    if (action) card.appendChild(el("div", null, "action carried out: " + action));
    if (reason) card.appendChild(el("div", "muted", reason));
    return card;
  }

  function strip(section, images, episode, run) {
    const box = el("article", "episode");
    box.dataset.scenario = section.scenario;
    box.dataset.outcome = episode.o;
    const head = el("div", "head");
    head.appendChild(el("strong", null, section.scenario + " #" + episode.s));
    head.appendChild(el("span", "badge " + episode.o, episode.o));
    head.appendChild(el("span", null, episode.t.length + " turn(s)"));
    if (episode.c !== null) head.appendChild(el("span", "muted", "answer key: " + episode.c));
    box.appendChild(head);
    if (episode.d && episode.d.length) {
      const demos = el("details", "demos");
      demos.appendChild(el("summary", null, episode.d.length + " demonstration(s) sent first"));
      episode.d.forEach(function (demo) {
        demos.appendChild(el("div", "muted", "sample #" + demo.s));
        const row = el("div", "turns");
        demo.t.forEach(function (t) { row.appendChild(turnCard(section, images, t, null, true)); });
        demos.appendChild(row);
      });
      box.appendChild(demos);
    }
    const turns = el("div", "turns");
    episode.t.forEach(function (t) { turns.appendChild(turnCard(section, images, t, episode.c, false)); });
    box.appendChild(turns);
    let end = episode.e !== null ? "error: " + episode.e : "ended: " + episode.o;
    if (run.history && episode.t.length > 1) end += " · history: each turn was sent with every earlier turn and answer";
    box.appendChild(el("div", "end", end));
    return box;
  }

  const runSelect = document.getElementById("viewer-run");
  const scenarioSelect = document.getElementById("viewer-scenario");
  const outcomeSelect = document.getElementById("viewer-outcome");
  const target = document.getElementById("viewer-episodes");
  let observer = null;

  function drawSection(holder) {
    if (holder.dataset.drawn) return;
    holder.dataset.drawn = "1";
    const run = index.runs[Number(holder.dataset.run)];
    const section = block(holder.dataset.block);
    const images = block("img-" + holder.dataset.scenarioIndex);
    const wanted = outcomeSelect.value;
    const episodes = section.episodes.filter(function (e) { return wanted === "all" || e.o === wanted; });
    const count = holder.querySelector(".count");
    count.textContent = episodes.length + " episode(s)";
    let shown = 0;
    const more = el("button", "more", "show more");
    function page() {
      const stop = Math.min(episodes.length, shown + PAGE);
      for (; shown < stop; shown++) holder.insertBefore(strip(section, images, episodes[shown], run), more);
      more.hidden = shown >= episodes.length;
      more.textContent = "show more (" + (episodes.length - shown) + " left)";
    }
    more.addEventListener("click", page);
    holder.appendChild(more);
    page();
  }

  function render() {
    if (observer) observer.disconnect();
    target.textContent = "";
    const runIndex = Number(runSelect.value);
    const run = index.runs[runIndex];
    observer = "IntersectionObserver" in window
      ? new IntersectionObserver(function (entries) {
          entries.forEach(function (entry) { if (entry.isIntersecting) drawSection(entry.target); });
        }, { rootMargin: "400px" })
      : null;
    run.sections.forEach(function (s) {
      if (scenarioSelect.value !== "all" && scenarioSelect.value !== s.scenario) return;
      const holder = el("section", "scenario-section");
      holder.dataset.run = String(runIndex);
      holder.dataset.block = s.block;
      holder.dataset.scenarioIndex = String(s.images);
      const h = el("h3", null, s.scenario + " ");
      h.appendChild(el("span", "muted count", s.count + " episode(s)"));
      holder.appendChild(h);
      target.appendChild(holder);
      if (observer) observer.observe(holder); else drawSection(holder);
    });
  }

  index.runs.forEach(function (run, i) { runSelect.appendChild(new Option(run.label, String(i))); });
  index.scenarios.forEach(function (s) { scenarioSelect.appendChild(new Option(s, s)); });
  index.outcomes.forEach(function (o) { outcomeSelect.appendChild(new Option(o, o)); });
  [runSelect, scenarioSelect, outcomeSelect].forEach(function (s) { s.addEventListener("change", render); });
  render();
})();
