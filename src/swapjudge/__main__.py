from swapjudge.cli import main

main()
