"""``python -m bench.recall``: run the BEAM recall benchmark."""

from bench.recall.run import main

raise SystemExit(main())
