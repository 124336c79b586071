from bench.ledger.run import main

main()
