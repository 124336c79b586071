"""``python -m bench.recall``: the ranking and the score on three kinds of data
(:mod:`bench.recall.across`); ``python -m bench.recall.engine_sets`` measures Engine.search."""

from bench.recall.across import main

raise SystemExit(main())
