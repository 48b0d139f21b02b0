// The wm-kernel dashboard's front end (an anywidget ES module: no build step, no dependency).
// Everything it shows is HTML the kernel worked out (escaped there); this module lays it out,
// keeps the user's own choices (the open tab, folded panels) and sends back what the user does:
// the slider and play move the synced `turn`, the buttons and switches send an action message.

const OFFLINE = "a saved view: run the notebook's cells to bring this dashboard to life";

function make(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

// Outside JupyterLab (marimo, VS Code, Colab) the --jp-* variables are missing: the dashboard
// then brings its own, light or dark as the host is.
function hostIsDark() {
  // marimo marks the body "dark"/"light" (and data-theme); others may mark the root element
  for (const node of [document.body, document.documentElement]) {
    if (!node) continue;
    const theme = `${node.className} ${node.getAttribute("data-theme") || ""}`;
    if (/\bdark\b|dark-theme|dark-mode/.test(theme)) return true;
    if (/\blight\b|light-theme|light-mode/.test(theme)) return false;
  }
  return !!window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
}

function render({ model, el }) {
  // JupyterLab's notebook shortcuts (arrows select cells in command mode) stay out of the
  // dashboard: its slider, text boxes and buttons take their own keys
  const root = make("div", { class: "wm-dash", "data-lm-suppress-shortcuts": "true" });
  const banner = make("div", { class: "wm-banner", "aria-live": "polite" });
  const offline = make("div", { class: "wm-offline", text: OFFLINE });
  const slider = make("input", { type: "range", min: "0", step: "1", "aria-label": "turn on view" });
  const reading = make("output", { class: "wm-reading" });
  const play = make("button", {
    type: "button",
    title: "Replay the recorded turns, one a second (from the first when the latest is shown)",
    text: "▶ Play",
  });
  const stop = make("button", {
    type: "button",
    title: "Stop replaying: stay on the turn shown (move the slider to the end for the live view)",
    text: "■ Stop",
  });
  const count = make("input", { type: "number", min: "1", max: "10000", value: "1", "aria-label": "turns to advance" });
  const advance = make("button", {
    type: "button",
    title: "Complete this many turns of the live session (as %turn N does)",
    text: "advance",
  });
  const summary = make("input", { type: "text", placeholder: "summary of the segment", "aria-label": "segment summary" });
  const collapse = make("button", {
    type: "button",
    title: "End the segment: stateful trinkets are flushed",
    text: "collapse segment",
  });
  const error = make("div", { class: "wm-errors", role: "alert" });
  const tabbar = make("div", { class: "wm-tabbar", role: "tablist" });
  const panel = make("div", { class: "wm-tabpanel", role: "tabpanel" });
  root.append(
    banner,
    offline,
    make("div", { class: "wm-controls" }, [play, stop, make("label", { class: "wm-turn" }, ["turn ", slider]), reading]),
    make("div", { class: "wm-controls" }, [
      make("label", {}, ["turns ", count]),
      advance,
      summary,
      collapse,
    ]),
    error,
    tabbar,
    panel,
  );
  el.append(root);

  // the user's own choices, kept across redraws: which panels are open, and the fold each
  // section had when it last changed between empty and not
  const open = new Map();
  const wasEmpty = new Map();

  function theme() {
    const forced = model.get("theme");
    const own = !getComputedStyle(el).getPropertyValue("--jp-layout-color0").trim();
    root.classList.toggle("wm-own-theme", own || forced !== "auto");
    const dark = forced === "dark" || (forced === "auto" && own && hostIsDark());
    root.classList.toggle("wm-dark", dark);
    root.classList.toggle("wm-light", !dark && (own || forced === "light"));
  }

  function send(turn) {
    model.set("turn", turn);
    model.save_changes();
  }

  function controls() {
    const latest = model.get("latest");
    const turn = model.get("turn");
    slider.max = String(latest);
    slider.value = String(turn);
    slider.setAttribute("aria-valuetext", turn >= latest ? `turn ${turn}, live` : `turn ${turn} of ${latest}, read-only`);
    reading.textContent = `${turn} / ${latest}`;
    const closed = model.get("session_closed");
    advance.disabled = closed;
    collapse.disabled = model.get("read_only");
    play.disabled = latest === 0;
  }

  function tabs() {
    const current = model.get("tab");
    tabbar.replaceChildren(
      ...model.get("tabs").map((tab) =>
        make("button", {
          type: "button",
          role: "tab",
          class: "wm-tab",
          "data-key": tab.key,
          "aria-selected": String(tab.key === current),
          text: tab.title,
          onclick: () => {
            model.set("tab", tab.key);
            model.save_changes();
          },
        }),
      ),
    );
  }

  function sectionsTab(key) {
    const panels = model.get("panels");
    const slots = model.get("text_slots");
    const names = model.get("sections")[key] || [];
    if (!names.length) return [make("div", { class: "wm-small" }, [make("i", { text: "no sections here" })])];
    return names.map((name) => {
      const shown = panels[name] || { title: name, status: "", empty: true };
      if (wasEmpty.get(name) !== shown.empty) {
        open.set(name, !shown.empty); // folds when it empties, opens when content arrives
        wasEmpty.set(name, shown.empty);
      }
      const details = make("details", { class: "wm-panel", "data-section": name });
      details.open = open.get(name);
      details.addEventListener("toggle", () => open.set(name, details.open));
      const title = make("summary", { text: shown.empty ? `${shown.title} · empty` : shown.title });
      const status = make("div", { class: "wm-status" });
      status.innerHTML = shown.status;
      const text = make("div", { class: "wm-text" });
      text.innerHTML = (slots[name] && model.get(slots[name])) || "";
      details.append(title, status, text);
      return details;
    });
  }

  function switchesTab() {
    const readOnly = model.get("read_only");
    return model.get("switches").map((item) => {
      const box = make("input", { type: "checkbox" });
      box.checked = item.enabled;
      box.disabled = readOnly;
      box.addEventListener("change", () => {
        model.send({ do: "switch", trinket: item.trinket, enabled: box.checked });
        box.checked = item.enabled; // the kernel's `switches` says what took effect
      });
      return make("label", { class: "wm-switch" }, [box, ` ${item.label}`]);
    });
  }

  function content() {
    const key = model.get("tab");
    const tab = model.get("tabs").find((t) => t.key === key) || { kind: "drawn" };
    const scroll = panel.scrollTop;
    if (tab.kind === "sections") panel.replaceChildren(...sectionsTab(key));
    else if (tab.kind === "toggles") panel.replaceChildren(...switchesTab());
    else panel.innerHTML = model.get("tab_html");
    panel.scrollTop = scroll;
  }

  function all() {
    theme();
    banner.innerHTML = model.get("banner");
    error.innerHTML = model.get("error");
    controls();
    tabs();
    content();
  }

  // play: step the slider a turn a second up to the latest turn (from 0 when it is on view)
  let timer = null;
  function playing() {
    clearInterval(timer);
    timer = null;
    if (!model.get("playing")) return;
    if (model.get("turn") >= model.get("latest")) send(0);
    timer = setInterval(() => {
      const turn = model.get("turn");
      if (turn >= model.get("latest")) {
        model.set("playing", false);
        model.save_changes();
        return;
      }
      send(turn + 1);
    }, 1000);
  }

  slider.addEventListener("input", () => {
    reading.textContent = `${slider.value} / ${model.get("latest")}`;
  });
  slider.addEventListener("change", () => send(Number(slider.value)));
  // the slider's keys, done here (a host may take arrows for itself: JupyterLab selects cells
  // with them): arrows a turn, PageUp and PageDown a tenth of the range, Home and End its ends,
  // never past either end
  slider.addEventListener("keydown", (event) => {
    const latest = model.get("latest");
    const now = model.get("turn");
    const page = Math.max(1, Math.round(latest / 10));
    const moves = {
      ArrowRight: now + 1,
      ArrowUp: now + 1,
      ArrowLeft: now - 1,
      ArrowDown: now - 1,
      PageUp: now + page,
      PageDown: now - page,
      Home: 0,
      End: latest,
    };
    if (!(event.key in moves)) return;
    event.preventDefault();
    event.stopPropagation();
    const next = Math.min(latest, Math.max(0, moves[event.key]));
    slider.value = String(next);
    reading.textContent = `${next} / ${latest}`;
    if (next !== now) send(next);
  });
  play.addEventListener("click", () => {
    model.set("playing", true);
    model.save_changes();
  });
  stop.addEventListener("click", () => {
    model.set("playing", false);
    model.save_changes();
  });
  advance.addEventListener("click", () => {
    const n = Number(count.value);
    model.send({ do: "advance", n: Number.isInteger(n) ? n : 1 });
  });
  collapse.addEventListener("click", () => {
    model.send({ do: "collapse", summary: summary.value });
    summary.value = "";
  });

  model.on("change:turn", () => (controls(), content()));
  model.on("change:latest", controls);
  model.on("change:session_closed", controls);
  model.on("change:read_only", () => (controls(), content()));
  model.on("change:banner", () => (banner.innerHTML = model.get("banner")));
  model.on("change:error", () => (error.innerHTML = model.get("error")));
  model.on("change:tabs", () => (tabs(), content()));
  model.on("change:tab", () => (tabs(), content()));
  for (const name of ["tab_html", "sections", "panels", "switches"]) model.on(`change:${name}`, content);
  // each section's text is a trait of its own (its slot): listen to every slot there is
  const heard = new Set();
  function listen() {
    for (const slot of Object.values(model.get("text_slots"))) {
      if (heard.has(slot)) continue;
      heard.add(slot);
      model.on(`change:${slot}`, content);
    }
  }
  model.on("change:text_slots", () => (listen(), content()));
  listen();
  model.on("change:theme", theme);
  model.on("change:playing", playing);
  const scheme = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  scheme?.addEventListener?.("change", theme);
  // a host switching its theme while the dashboard shows (marimo's body class)
  const marks = new MutationObserver(theme);
  for (const node of [document.body, document.documentElement]) {
    if (node) marks.observe(node, { attributes: true, attributeFilter: ["class", "data-theme"] });
  }
  all();
  requestAnimationFrame(theme); // the host's variables are readable once the view is on the page
  playing();
  return () => {
    clearInterval(timer);
    scheme?.removeEventListener?.("change", theme);
    marks.disconnect();
  };
}

export default { render };
