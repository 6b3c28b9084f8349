from contextlens.cli import main

main()
