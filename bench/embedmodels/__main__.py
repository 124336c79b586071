"""``python -m bench.embedmodels``: measure the packaged embedding models and re-rankers."""

from bench.embedmodels.run import main

raise SystemExit(main())
