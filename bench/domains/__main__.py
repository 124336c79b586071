"""python -m bench.domains"""

from bench.domains.run import main

main()
