"""python -m bench.gating"""
from bench.gating.run import main

main()
