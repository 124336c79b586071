from bench.kgraph.run import main

main()
