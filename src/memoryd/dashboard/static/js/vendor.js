// The vendored libraries (static/vendor/, pinned by scripts/vendor-dashboard) are plain
// scripts that define a global; each is loaded once, when a view first needs it.

const loading = new Map();

function load(src, global) {
  if (window[global]) return Promise.resolve(window[global]);
  if (!loading.has(src)) {
    loading.set(src, new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = src;
      script.async = true;
      script.addEventListener("load", () => resolve(window[global]));
      script.addEventListener("error", () => reject(new Error(`could not load ${src}`)));
      document.head.append(script);
    }));
  }
  return loading.get(src);
}

export const forceGraph = () => load("/dashboard/static/vendor/force-graph/force-graph.min.js", "ForceGraph");
export const jsdiff = () => load("/dashboard/static/vendor/diff/diff.min.js", "Diff");
