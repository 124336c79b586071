"""Smart-wait bench: detection latency, idle CPU, frames sent to the vision step.

    python -m bench.waits             # full run (~8 min): latency, idle CPU (4 x 60 s), frames
    python -m bench.waits --quick     # smoke run (~2 min): shorter windows, fewer waits

What is measured (details in each module's docstring):

1. Detection latency (bench/waits/latency.py): 20 file, 20 tmux-pane and 20 pty waits at
   once in one scheduler at the default ladders; text appears 1..45 s after the start;
   p50/p95 of (resolved_at - time the line was written). Budget: p50 <= 1 s.
2. Idle CPU (bench/waits/idle.py): 20 waits that never resolve, over 60 s, as % of one
   core: 20 file waits; a mix (6 file, 6 tmux, 3 pty, 2 pid, 2 http, 1 xterm window);
   the same mix with a fixed 0.25 s polling interval (the ratio shows what adaptive
   polling saves); the mix plus the system activity sources. Budget: <= 2% of one core.
3. Frames (bench/waits/frames.py): the gate calibrated on a real xterm (pixels and tiles
   changed by 1-6 new lines, vs a fixed 1% gate), and frames captured vs sent to the
   vision step with the gate on and off, on the same screen in the same run.

Tmux, Xvfb/xterm and tesseract parts are skipped (and said so) when not installed.
Results: bench/results/waits.json and waits.md (--quick: waits_quick.*).
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import machine_info, md_table, other_load, percentile, source_fingerprint
from bench.common import write_results
from bench.waits import frames, idle, latency
from bench.waits.env import Xvfb, have

SRC = Path(__file__).resolve().parents[2] / "src" / "memoryd" / "waits"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(prog="python -m bench.waits", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="short smoke run")
    p.add_argument("--idle-s", type=float, default=None, help="idle window per configuration")
    p.add_argument("--waits", type=int, default=None, help="waits per kind for latency")
    p.add_argument("--longest", type=float, default=None, help="latest text appearance (s)")
    p.add_argument("--skip", default="", help="comma list of parts to skip: latency,idle,frames")
    p.add_argument("--render-only", action="store_true",
                   help="rewrite the markdown from the JSON of the last run")
    return p.parse_args(argv)


def _lat_rows(lat: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for kind in ("file", "tmux", "pty"):
        s = lat.get(kind, {}).get("samples_ms", [])
        if s:
            rows.append([kind, len(s), lat[kind]["unresolved"], round(percentile(s, 50)),
                         round(percentile(s, 95)), round(max(s))])
    return rows


def headline(data: dict[str, Any]) -> str:
    """The budget lines, computed from the numbers."""
    lines = []
    for kind in ("file", "tmux"):
        s = data.get("latency", {}).get(kind, {}).get("samples_ms", [])
        if s:
            p50 = percentile(s, 50)
            lines.append(f"- {kind} detection latency p50 {p50:.0f} ms, p95 "
                         f"{percentile(s, 95):.0f} ms (budget p50 <= 1000 ms: "
                         f"{'met' if p50 <= 1000 else 'MISSED'}).")
    idle = data.get("idle", {})
    if idle:
        label = next(k for k in idle if k.startswith("20 mixed waits (adaptive"))
        cpu = idle[label]["cpu_percent_of_one_core"]
        lines.append(f"- 20 idle mixed waits use {cpu:.2f}% of one core (budget 2%: "
                     f"{'met' if cpu <= 2 else 'MISSED'}); a fixed 0.25 s interval would use "
                     f"{1 / data['ratio']['adaptive_over_fixed_cpu']:.1f}x as much.")
    g = data.get("frames", {}).get("gate_on_off")
    if g:
        lines.append(f"- Frames sent to the vision step: {g['gate_on']['vision_frames']} with the "
                     f"gate, {g['gate_off']['vision_frames']} without, out of "
                     f"{g['gate_on']['captured']} captured.")
    return "## Headline\n\n" + "\n".join(lines) if lines else ""


def render(data: dict[str, Any]) -> str:
    """The markdown summary."""
    out = [f"# Smart waits\n\nRun {data['started']} with `python -m bench.waits"
           f"{' --quick' if data['quick'] else ''}` on {data['machine']['cpus']} CPUs "
           f"({data['machine']['cpu_model']}); other processes kept {data['other_load']} cores "
           f"busy at the start. Waits source {data['source']['sha256']}.", headline(data)]
    if "latency" in data:
        lat = data["latency"]
        out.append("## Detection latency (default polling)\n\nAll waits at once in one "
                   f"scheduler; text appears {lat['delays_s'][0]:g}-{lat['delays_s'][-1]:g} s "
                   "after the start (waits past 30 s of quiet poll at the slowest text "
                   "interval, 1 s). Latency = resolved_at - the time written in the line.\n")
        out.append(md_table(["target", "waits", "unresolved", "p50 ms", "p95 ms", "max ms"],
                            _lat_rows(lat)))
    if "idle" in data:
        rows = [[label, r["kinds"], r["seconds"], r["cpu_s"], r["cpu_percent_of_one_core"],
                 r["checks_per_s"]] for label, r in data["idle"].items()]
        out.append("## CPU of 20 idle waits\n\nThis process's CPU (all threads) plus reaped "
                   "children over the window, % of one core. Budget 2%.\n")
        out.append(md_table(["configuration", "targets", "s", "CPU s", "% of one core",
                             "checks/s"], rows))
        if "ratio" in data:
            out.append(f"\nAdaptive vs fixed 0.25 s polling (mixed): CPU ratio "
                       f"{data['ratio']['adaptive_over_fixed_cpu']:.2f}.")
    if "frames" in data:
        out.append(_render_frames(data["frames"]))
    out.append("\n" + data.get("notes", ""))
    return "\n\n".join(out)


def _render_frames(fr: dict[str, Any]) -> str:
    parts = []
    if "calibration" in fr:
        cal = fr["calibration"]
        rows = [[r["new_lines"], r["pixel_percent"], f"{r['changed_tiles']}/{r['total_tiles']}",
                 r["tile_gate_opens"], r["fixed_1pct_gate_opens"]] for r in cal["rows"]]
        parts.append(f"## Diff gate on a real xterm ({cal['window_px'][0]}x{cal['window_px'][1]}"
                     f" px)\n\nGate: {cal['gate']}. Grab {cal['grab_ms_median']} ms, "
                     f"OCR {cal['ocr_ms_median']} ms per frame (medians).\n")
        parts.append(md_table(["new lines", "pixels changed %", "tiles changed",
                               "tile gate opens", "1% pixel gate opens"], rows))
    if "gate_on_off" in fr:
        g = fr["gate_on_off"]
        rows = [[v, g[v]["captured"], g[v]["passed_gate"], g[v]["vision_frames"],
                 g[v]["vision_calls"]] for v in ("gate_on", "gate_off")]
        ratio = g["gate_on"]["vision_frames"] / max(1, g["gate_off"]["vision_frames"])
        parts.append(f"## Frames sent to the vision step\n\nOne xterm, {len(g['bursts'])} "
                     f"bursts of output over {g['seconds']} s, two schedulers (gate on / off) "
                     "watching it at the default screen ladder.\n")
        parts.append(md_table(["variant", "captured", "passed gate", "sent to vision",
                               "vision calls"], rows))
        parts.append(f"\nFrames to vision, gate on / gate off: {ratio:.2f}.")
    return "\n\n".join(parts)


def main(argv: list[str] | None = None) -> None:
    """Run the bench and write the results."""
    args = parse_args(argv)
    if args.render_only:
        import json

        from bench.common import RESULTS_DIR

        name = "waits_quick" if args.quick else "waits"
        data = json.loads((RESULTS_DIR / f"{name}.json").read_text())
        (RESULTS_DIR / f"{name}.md").write_text(render(data).rstrip() + "\n")
        return
    skip = set(filter(None, args.skip.split(",")))
    idle_s = args.idle_s or (10.0 if args.quick else 60.0)
    n = args.waits or (6 if args.quick else 20)
    longest = args.longest or (12.0 if args.quick else 45.0)
    data: dict[str, Any] = {"started": datetime.now(UTC).isoformat(timespec="seconds"),
                            "quick": args.quick, "machine": machine_info(),
                            "source": source_fingerprint(SRC), "other_load": other_load()}
    notes = []
    with_tmux, with_x = have("tmux"), have("Xvfb", "xterm", "xdotool", "xwininfo")
    if not with_tmux:
        notes.append("tmux is not installed: tmux waits were skipped.")
    if not with_x:
        notes.append("Xvfb/xterm/xdotool are not installed: screen parts were skipped.")
    with tempfile.TemporaryDirectory(prefix="waits-bench-") as tmp:
        root = Path(tmp)
        if "latency" not in skip:
            print(f"latency: {n} waits per kind, text at 1..{longest:g} s", flush=True)
            (root / "lat").mkdir()
            data["latency"] = latency.run(root / "lat", n, longest, with_tmux)
        if "idle" not in skip:
            (root / "idle").mkdir()
            data["idle"] = idle.run_all(root / "idle", idle_s, with_tmux, with_x)
            labels = list(data["idle"])
            data["ratio"] = {"adaptive_over_fixed_cpu": data["idle"][labels[1]]["cpu_s"]
                             / max(1e-9, data["idle"][labels[2]]["cpu_s"])}
        if "frames" not in skip and with_x and have("tesseract"):
            print("frames: calibration and gate on/off", flush=True)
            xvfb = Xvfb()
            try:
                (root / "fr").mkdir()
                data["frames"] = {"calibration": frames.calibrate(xvfb, root / "fr"),
                                  "gate_on_off": frames.gate_on_off(
                                      xvfb, root / "fr", seed=7, bursts=6 if args.quick else 10,
                                      quiet_s=10 if args.quick else 30)}
            finally:
                xvfb.close()
    data["notes"] = " ".join(notes)
    data["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    name = "waits_quick" if args.quick else "waits"
    jpath, mpath = write_results(name, data, render(data))
    print(f"wrote {jpath} and {mpath}")
