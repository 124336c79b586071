from bench.throughput.run import main

main()
