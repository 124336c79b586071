import { h } from "../ui.js";
export async function render({ main }) { main.append(h("h1", {}, "graph")); return null; }
