from bench.scale.run import main

main()
