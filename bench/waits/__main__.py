from bench.waits.run import main

main()
