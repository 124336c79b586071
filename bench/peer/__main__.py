from bench.peer.run import main

main()
