from bench.nextday import main

main()
