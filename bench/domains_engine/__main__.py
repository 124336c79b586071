"""python -m bench.domains_engine"""

from bench.domains_engine.run import main

main()
