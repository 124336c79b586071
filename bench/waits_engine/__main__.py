from bench.waits_engine.run import main

main()
