"""A writer process for the crash tests: imports a JSONL file into a store in batches.

    python writer.py STORE_PATH JSONL_PATH BATCH_SIZE [--hang-in-batch N --ready-file PATH]

It uses the real default model (loaded here, in this process). With
``--hang-in-batch N`` the N-th batch's rows are written inside an open transaction
and then the process signals ``--ready-file`` and sleeps, so the test can SIGKILL it
while a transaction is provably half done.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import memoryd
from memoryd.store.sqlite import SQLiteStore


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("jsonl")
    parser.add_argument("batch_size", type=int)
    parser.add_argument("--hang-in-batch", type=int, default=0)
    parser.add_argument("--ready-file", default=None)
    args = parser.parse_args()

    if args.hang_in_batch:
        original = SQLiteStore.insert
        calls = {"n": 0}

        def insert(self, memories, vectors, actor, **kwargs):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if calls["n"] != args.hang_in_batch:
                return original(self, memories, vectors, actor, **kwargs)
            with self.transaction():
                original(self, memories, vectors, actor, **kwargs)  # joins the open transaction
                Path(args.ready_file).write_text(str(len(memories)))
                while True:  # wait to be killed, transaction still open
                    time.sleep(1)

        SQLiteStore.insert = insert  # type: ignore[method-assign]

    with memoryd.open(f"sqlite:///{Path(args.store).resolve()}") as mem:
        mem.embedder.load()
        print("model loaded", flush=True)
        report = mem.admin.import_jsonl(Path(args.jsonl), batch_size=args.batch_size)
    print(f"imported {report.imported}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
