from simulplay.cli import main

main()
