// Lays out the krag diagram inside its frame (ui/web/diagram.py writes the page): renders
// the Mermaid source top down and left to right, keeps the direction that is drawn largest
// without horizontal scrolling (top down on a tie), and scales the drawing to the frame's width, never below
// LIMITS.minScale (labels stay >= 12 px: mermaid draws them at 16 px) and never above
// LIMITS.maxScale (a two-node diagram is not blown up). What still does not fit scrolls
// inside the frame instead of shrinking, with a visible scroll bar and a line saying so. LIMITS is defined by the page before this script.
(function () {
  "use strict";
  const pre = document.querySelector("pre.mermaid");
  const box = document.querySelector(".diagram");
  const source = pre.textContent;
  let drawings = [];

  mermaid.initialize({
    startOnLoad: false, securityLevel: "strict", theme: "default",
    themeVariables: { fontSize: LIMITS.fontPx + "px" },
    flowchart: { useMaxWidth: false, wrappingWidth: LIMITS.wrapPx },
  });

  // The source top down first (a tie keeps it: the chat column is narrow), then left to
  // right, whichever of the two the source was written in.
  function variants(text) {
    const m = /^graph (LR|TD)\n/.exec(text);
    if (!m) return [{ direction: "as written", text }];
    const body = text.slice(m[0].length);
    return ["TD", "LR"].map((d) => ({ direction: d, text: "graph " + d + "\n" + body }));
  }

  // The scale a drawing of natural size w x h gets in a frame `width` wide, and how far it
  // still overflows the frame's width and LIMITS.maxHeight at that scale.
  function fit(w, h, width) {
    let s = Math.min(LIMITS.maxScale, width / w);
    if (h * s > LIMITS.maxHeight) s = Math.min(s, LIMITS.maxHeight / h);
    s = Math.max(LIMITS.minScale, s);
    return { s, wide: w * s > width + 1, tall: h * s > LIMITS.maxHeight + 1 };
  }

  function better(a, b) { // no horizontal scrolling first, then no vertical, then larger
    if (a.wide !== b.wide) return !a.wide;
    if (a.tall !== b.tall) return !a.tall;
    return a.s > b.s * 1.05;
  }

  function place() {
    if (!drawings.length) return;
    const width = document.documentElement.clientWidth;
    let best = null;
    for (const d of drawings) {
      const f = { ...fit(d.w, d.h, width), d };
      if (!best || better(f, best)) best = f;
    }
    if (pre.dataset.shown !== best.d.direction) {
      pre.innerHTML = best.d.svg;
      pre.dataset.shown = best.d.direction;
    }
    const svg = pre.querySelector("svg");
    svg.removeAttribute("style");
    svg.setAttribute("width", (best.d.w * best.s).toFixed(1));
    svg.setAttribute("height", (best.d.h * best.s).toFixed(1));
    box.style.maxHeight = LIMITS.maxHeight + 24 + "px"; // room for a horizontal scroll bar
    const hint = document.querySelector(".hint");
    if (hint) hint.hidden = !(best.wide || best.tall);
    document.body.dataset.scale = best.s.toFixed(3);
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
  window.addEventListener("resize", () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(place);
  });
})();
