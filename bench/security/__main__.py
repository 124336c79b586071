from bench.security.run import main

main()
