// Lays out the krag diagram inside its frame (ui/web/diagram.py writes the page and LIMITS).
// Renders the Mermaid source top down, top down with its separate parts stacked (an
// invisible link from each part to the next, so two unconnected groups do not sit side by
// side) and left to right, and keeps the drawing that needs no horizontal scrolling, then no
// vertical, then comes out largest (the first on a tie).
// Inline (LIMITS.window false): scaled to the frame's width within LIMITS.minScale (labels,
// drawn at 16 px, stay >= 12 px) and LIMITS.maxScale; a frame narrower than LIMITS.narrowPx
// (a phone) may go down to LIMITS.narrowScale, and wrap names narrower, rather than scroll
// sideways. What still does
// not fit scrolls inside the frame, with a visible scroll bar and a line saying so.
// Enlarged (LIMITS.window true, in a dialog): the whole drawing scaled to the frame's width
// and to the height the window leaves it, whatever the scale; "Full size" (only when that is
// below 1) draws it at mermaid's own size in a scrolling box as tall as that room.
(function () {
  "use strict";
  const pre = document.querySelector("pre.mermaid");
  const box = document.querySelector(".diagram");
  const zoom = document.querySelector("button.zoom");
  const source = pre.textContent;
  const drawings = [];
  let zoomed = false;

  mermaid.initialize({
    startOnLoad: false, securityLevel: "strict", theme: "default",
    themeVariables: { fontSize: LIMITS.fontPx + "px" },
    flowchart: { useMaxWidth: false, wrappingWidth: LIMITS.wrapPx },
  });

  // Invisible links (`~~~`, after every drawn edge so linkStyle indices keep their edges)
  // chaining the graph's connected parts top to bottom; "" when it is one part.
  function stacking(body) {
    const parent = new Map();
    const find = (a) => (parent.get(a) === a ? a : find(parent.get(a)));
    for (const m of body.matchAll(/^ +(n\d+)\[/gm)) parent.set(m[1], m[1]);
    const sinks = new Set(parent.keys());
    const sources = new Set(parent.keys());
    for (const m of body.matchAll(/^ +(n\d+) -->.* (n\d+) *$/gm)) {
      if (!parent.has(m[1]) || !parent.has(m[2])) continue;
      parent.set(find(m[1]), find(m[2]));
      sinks.delete(m[1]);
      sources.delete(m[2]);
    }
    const parts = new Map(); // root -> [a source, a sink] of each part, in drawing order
    for (const n of parent.keys()) {
      const part = parts.get(find(n)) || [null, null];
      if (sources.has(n) && !part[0]) part[0] = n;
      if (sinks.has(n)) part[1] = n;
      parts.set(find(n), part);
    }
    for (const [root, part] of parts) if (!part[0] || !part[1]) parts.set(root, [root, root]);
    const list = [...parts.values()];
    return list.slice(1).map((p, i) => `    ${list[i][1]} ~~~ ${p[0]}`).join("\n");
  }

  // The source top down, stacked when in parts, and left to right (first wins a tie); in a
  // frame narrower than LIMITS.narrowPx the same again laid out by LIMITS.narrowFlowchart
  // (names wrapped narrower, ranks and nodes closer): narrower drawings for a phone.
  function variants(text) {
    const m = /^graph (LR|TD)\n/.exec(text);
    if (!m) return [{ direction: "as written", text }];
    const body = text.slice(m[0].length).replace(/\n*$/, "\n");
    const links = stacking(body);
    const out = [{ direction: "TD", text: "graph TD\n" + body }];
    if (links) out.push({ direction: "TD stacked", text: "graph TD\n" + body + links + "\n" });
    out.push({ direction: "LR", text: "graph LR\n" + body });
    if (LIMITS.window || document.documentElement.clientWidth >= LIMITS.narrowPx) return out;
    const wrap = `%%{init: ${JSON.stringify({ flowchart: LIMITS.narrowFlowchart })}}%%\n`;
    return out.concat(out.map((v) => ({ direction: v.direction + " narrow", text: wrap + v.text })));
  }

  // The height the window leaves the drawing in an enlarged view: the most the dialog's
  // scrolling body (as tall as the window allows) shows, less what it holds besides this
  // frame, less the rest of this page (legend, button); without a dialog, the window's.
  // Streamlit never shrinks a frame, so the page starts small (the source hidden, the
  // button's room kept) and only grows to this.
  function room() {
    const page = document.documentElement.getBoundingClientRect().height; // margins and all
    const rest = page - box.getBoundingClientRect().height;
    let height = window.innerHeight;
    try {
      const frame = window.frameElement;
      let scroller = frame && frame.parentElement;
      while (scroller && !/auto|scroll/.test(getComputedStyle(scroller).overflowY)) {
        scroller = scroller.parentElement;
      }
      if (scroller && scroller.closest('[role="dialog"]')) {
        const style = getComputedStyle(scroller);
        const px = (name) => parseFloat(style[name]) || 0;
        const capacity = style.boxSizing === "border-box"
          ? px("maxHeight") - px("borderTopWidth") - px("borderBottomWidth")
          : px("maxHeight") + px("paddingTop") + px("paddingBottom");
        // what the dialog's body holds besides this frame: title row, gaps, padding
        const around = scroller.scrollHeight - frame.getBoundingClientRect().height;
        height = (px("maxHeight") ? capacity : scroller.clientHeight) - around;
      } else if (frame) {
        height = window.top.innerHeight - frame.getBoundingClientRect().top - LIMITS.marginPx;
      }
    } catch (err) { // not the app's own page: the frame's height is all we know
      height = LIMITS.maxHeight;
    }
    return Math.max(120, Math.floor(height - rest - 2));
  }

  // The scale a drawing of natural size w x h gets, and how far it still overflows.
  function fit(w, h, width, height) {
    if (LIMITS.window) {
      const s = Math.min(LIMITS.maxScale, width / w, height / h);
      return { s, wide: false, tall: false };
    }
    const floor = width < LIMITS.narrowPx ? LIMITS.narrowScale : LIMITS.minScale;
    let s = Math.min(LIMITS.maxScale, width / w);
    if (h * s > height) s = Math.min(s, height / h);
    s = Math.max(floor, s);
    return { s, wide: w * s > width + 1, tall: h * s > height + 1 };
  }

  // No horizontal scrolling first (else the least), then no vertical, then larger.
  function better(a, b) {
    if (a.wide !== b.wide) return !a.wide;
    if (a.wide) return a.d.w * a.s < b.d.w * b.s - 1;
    if (a.tall !== b.tall) return !a.tall;
    return a.s > b.s * 1.05;
  }

  function place() {
    if (!drawings.length) return;
    const width = document.documentElement.clientWidth;
    const height = LIMITS.window ? room() : LIMITS.maxHeight;
    let best = null;
    for (const d of drawings) {
      const f = { ...fit(d.w, d.h, width, height), d };
      if (!best || better(f, best)) best = f;
    }
    if (pre.dataset.shown !== best.d.direction) {
      pre.innerHTML = best.d.svg;
      pre.dataset.shown = best.d.direction;
    }
    const s = zoomed ? Math.max(1, best.s) : best.s;
    const svg = pre.querySelector("svg");
    svg.removeAttribute("style");
    svg.setAttribute("width", (best.d.w * s).toFixed(1));
    svg.setAttribute("height", (best.d.h * s).toFixed(1));
    box.style.maxHeight = height + (LIMITS.window ? 0 : 24) + "px"; // room for a scroll bar
    const hint = document.querySelector(".hint");
    if (hint) hint.hidden = !(best.wide || best.tall);
    if (zoom) { // its room kept either way: the page's height does not change with it
      zoom.style.visibility = !zoomed && best.s >= 0.999 ? "hidden" : "visible";
      zoom.textContent = zoomed ? "Fit to window" : "Full size";
    }
    document.body.dataset.scale = s.toFixed(3);
  }

  async function draw() {
    const holder = document.createElement("div");
    holder.style.cssText = "position:absolute;visibility:hidden;left:-99999px";
    document.body.appendChild(holder);
    const texts = variants(source);
    try {
      for (let i = 0; i < texts.length; i++) {
        const { svg } = await mermaid.render("krag-diagram-" + i, texts[i].text, holder);
        holder.innerHTML = svg;
        const view = holder.querySelector("svg").viewBox.baseVal;
        drawings.push({ direction: texts[i].direction, svg, w: view.width, h: view.height });
      }
    } finally {
      holder.remove();
    }
    place();
  }

  draw().catch((err) => {
    pre.textContent = source;
    pre.classList.add("failed");
    console.error("diagram", err);
  });
  let pending = 0;
  const later = () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(place);
  };
  window.addEventListener("resize", later);
  if (LIMITS.window) {
    try { window.top.addEventListener("resize", later); } catch (err) { /* another origin */ }
  }
  if (zoom) zoom.addEventListener("click", () => { zoomed = !zoomed; place(); });
})();
