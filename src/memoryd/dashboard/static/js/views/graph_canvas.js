// The force-directed graph on a canvas (force-graph, vendored): nodes coloured by a key and
// sized by a value, archived nodes drawn as traces (dashed, faint, their edges dashed),
// click to select, drag a node onto another to link them, drag elsewhere to move it.

import { forceGraph } from "../vendor.js";

// Okabe-Ito and a few more: distinguishable, also with common colour-vision deficiencies.
export const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00",
  "#7a6f00", "#332288", "#882255", "#44AA99", "#117733", "#999933", "#AA4499", "#6b6b6b"];
const EDGE_COLOURS = {};
const LARGE_EDGES = 800;

export function colourOf(key, keys) {
  const index = keys.indexOf(key);
  return PALETTE[(index < 0 ? keys.length : index) % PALETTE.length];
}

function edgeColour(type) {
  if (!(type in EDGE_COLOURS)) EDGE_COLOURS[type] = PALETTE[(Object.keys(EDGE_COLOURS).length + 3) % PALETTE.length];
  return EDGE_COLOURS[type];
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export async function createCanvas(box, { onSelect, onLink, isVisible }) {
  const ForceGraph = await forceGraph();
  const state = { selected: null, hovered: null, dragging: null, pinned: new Map(), dropTarget: null,
    frames: [] };
  const fg = ForceGraph()(box)
    .width(box.clientWidth)
    .height(box.clientHeight)
    .backgroundColor("#ffffff")
    .nodeId("id")
    .nodeLabel((n) => escapeHtml(n.label))
    .nodeVal((n) => n.r * n.r)
    .nodeVisibility((n) => isVisible(n))
    .linkVisibility((l) => isVisible(l.source) && isVisible(l.target))
    .linkColor((l) => edgeColour(l.type))
    .linkWidth((l) => 0.5 + 1.5 * (l.weight ?? 0.5))
    .linkLineDash((l) => (l.trace ? [3, 3] : null))
    .linkDirectionalArrowLength(4)
    .linkDirectionalArrowRelPos(1)
    .linkLabel((l) => escapeHtml(l.type))
    .nodeCanvasObject((node, ctx, scale) => draw(node, ctx, scale, state))
    .nodePointerAreaPaint((node, colour, ctx) => {
      ctx.fillStyle = colour;
      ctx.beginPath();
      ctx.arc(node.x, node.y, node.r + 2, 0, 2 * Math.PI);
      ctx.fill();
    })
    .onNodeHover((node) => { state.hovered = node ? node.id : null; })
    .onNodeClick((node) => onSelect(node.id))
    .onNodeDrag((node) => dragging(node, fg, state))
    .onNodeDragEnd((node) => dropped(node, fg, state, onLink))
    .onRenderFramePost(() => {
      // When each frame was drawn (the last 600): the frame rate bench/dashboard reports.
      state.frames.push(performance.now());
      if (state.frames.length > 600) state.frames.shift();
    })
    .cooldownTime(15000);
  const resize = new ResizeObserver(() => fg.width(box.clientWidth).height(box.clientHeight));
  resize.observe(box);
  return {
    fg,
    state,
    setData(data) {
      // Large graphs draw plainer edges (one stroke per colour, no arrow heads): at 2,000
      // nodes and 3,000 edges that doubles the frame rate (bench/results/dashboard.md).
      const large = data.links.length > LARGE_EDGES;
      fg.linkDirectionalArrowLength(large ? 0 : 4)
        .linkWidth(large ? 1 : (l) => 0.5 + 1.5 * (l.weight ?? 0.5))
        .d3AlphaDecay(large ? 0.05 : 0.0228);
      fg.graphData(data);
    },
    select(id) {
      state.selected = id;
    },
    focusOn(id) {
      const node = fg.graphData().nodes.find((n) => n.id === id);
      if (node && Number.isFinite(node.x)) {
        fg.centerAt(node.x, node.y, 400);
        fg.zoom(Math.max(fg.zoom(), 2.5), 400);
      }
    },
    screen(id) {
      const node = fg.graphData().nodes.find((n) => n.id === id);
      if (!node || !Number.isFinite(node.x)) return null;
      const point = fg.graph2ScreenCoords(node.x, node.y);
      const rect = box.getBoundingClientRect();
      return { x: rect.left + point.x, y: rect.top + point.y };
    },
    refreshStyle() {
      fg.nodeVisibility(fg.nodeVisibility()).linkVisibility(fg.linkVisibility());
    },
    dispose() {
      resize.disconnect();
      fg.pauseAnimation();
      fg._destructor?.();
      box.replaceChildren();
    },
  };
}

function draw(node, ctx, scale, state) {
  const r = node.r;
  ctx.globalAlpha = node.dim ? 0.18 : 1;
  ctx.beginPath();
  ctx.arc(node.x, node.y, r, 0, 2 * Math.PI);
  if (node.trace) {
    ctx.globalAlpha *= 0.7;
    ctx.setLineDash([4 / scale, 4 / scale]);
    ctx.lineWidth = 1.5 / scale;
    ctx.strokeStyle = node.colour;
    ctx.fillStyle = "#ffffff";
    ctx.fill();
    ctx.stroke();
    ctx.setLineDash([]);
  } else {
    ctx.fillStyle = node.colour;
    ctx.fill();
  }
  if (node.id === state.selected || node.id === state.dropTarget) {
    ctx.lineWidth = 3 / scale;
    ctx.strokeStyle = node.id === state.dropTarget ? "#1f6f3f" : "#1b1f24";
    ctx.beginPath();
    ctx.arc(node.x, node.y, r + 3 / scale, 0, 2 * Math.PI);
    ctx.stroke();
  }
  if (scale > 1.6 || node.id === state.selected || node.id === state.hovered) {
    ctx.font = `${11 / scale}px system-ui, sans-serif`;
    ctx.fillStyle = "#1b1f24";
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    const text = node.label.length > 40 ? `${node.label.slice(0, 39)}…` : node.label;
    ctx.fillText(text, node.x, node.y + r + 2 / scale);
  }
  ctx.globalAlpha = 1;
}

function nearest(node, nodes, scale) {
  let best = null;
  let bestDistance = Infinity;
  for (const other of nodes) {
    if (other === node || other.hidden) continue;
    const distance = Math.hypot(other.x - node.x, other.y - node.y);
    if (distance < Math.max(other.r + node.r, 14 / scale) && distance < bestDistance) {
      best = other;
      bestDistance = distance;
    }
  }
  return best;
}

function dragging(node, fg, state) {
  if (state.dragging !== node.id) {
    // Hold every other node still while one is dragged, so that a drop lands where aimed.
    state.dragging = node.id;
    state.start = { x: node.x, y: node.y };
    for (const other of fg.graphData().nodes) {
      if (other !== node && other.fx === undefined) {
        state.pinned.set(other.id, other);
        other.fx = other.x;
        other.fy = other.y;
      }
    }
  }
  const target = nearest(node, fg.graphData().nodes, fg.zoom());
  state.dropTarget = target ? target.id : null;
}

function dropped(node, fg, state, onLink) {
  const target = nearest(node, fg.graphData().nodes, fg.zoom());
  for (const other of state.pinned.values()) {
    other.fx = undefined;
    other.fy = undefined;
  }
  state.pinned.clear();
  state.dragging = null;
  state.dropTarget = null;
  if (target) {
    node.fx = state.start.x;
    node.fy = state.start.y;
    onLink(node.id, target.id);
  } else {
    node.fx = node.x;
    node.fy = node.y;
  }
}
