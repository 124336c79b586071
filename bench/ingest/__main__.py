"""``python -m bench.ingest``: smart ingest against add_many on BEAM and REALTALK."""

from bench.ingest.run import main

raise SystemExit(main())
