"""A separate process that adds nodes to one graph file, one locked update per node.

Usage: python graph_writer.py PATH WRITER_ID COUNT GO_FILE
Waits until GO_FILE exists (so every writer starts at once), then adds COUNT nodes
``w<WRITER_ID>-<i>``, each linked to the writer's previous node.
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from memoryd.graph.jsonfile import update_graph_file
from memoryd.models.kg import Graph, GraphEdge, GraphNode


def add(writer: str, i: int):
    def change(graph: Graph) -> Graph:
        now = datetime.now(timezone.utc)
        node = GraphNode(
            id=f"w{writer}-{i}",
            name=f"Writer {writer} item {i}",
            body=f"written by process {writer}",
            created=now,
        )
        edges = list(graph.edges)
        if i > 0:
            edges.append(GraphEdge(source=node.id, target=f"w{writer}-{i - 1}", type="relates_to"))
        return Graph(scope=graph.scope, nodes=[*graph.nodes, node], edges=edges)

    return change


def main() -> None:
    path, writer, count, go = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    for i in range(count):
        update_graph_file(path, add(writer, i), scope="project:race", timeout=60)


if __name__ == "__main__":
    main()
