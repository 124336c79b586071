from bench.dashboard.run import main

main()
