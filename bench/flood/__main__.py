from bench.flood.run import main

main()
