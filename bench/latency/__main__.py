from bench.latency.run import main

main()
