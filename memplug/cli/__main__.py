from memplug.cli import main

main()
