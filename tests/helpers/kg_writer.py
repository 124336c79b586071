"""A separate process that writes nodes to one project graph through the engine.

Usage: python kg_writer.py STORE_URL HOME PROJECT_ROOT WRITER_ID COUNT GO_FILE
Opens memoryd with the hash stand-in model (what is tested is the write path's locking,
not meaning; three real models would load for most of the test's time), waits until
GO_FILE exists so every writer starts at once,
then makes COUNT ``kg.write`` calls, each adding node ``w<WRITER_ID>-<i>`` linked to the
writer's previous node. Every call merges the graph file, writes the store and rewrites
the file under the file's lock.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from embedders import HashEmbedder  # tests/helpers, this script's directory

import memoryd


def main() -> None:
    url, home, root, writer, count, go = sys.argv[1:7]
    with memoryd.open(url, home=Path(home), embedder=HashEmbedder()) as mem:
        deadline = time.monotonic() + 120
        while not Path(go).exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        for i in range(int(count)):
            node = {"id": f"w{writer}-{i}", "name": f"Writer {writer} item {i}",
                    "body": f"written by process {writer}", "type": "fact"}
            edges = ([{"source": node["id"], "target": f"w{writer}-{i - 1}"}] if i else [])
            mem.kg.write(root, nodes=[node], edges=edges)


if __name__ == "__main__":
    main()
