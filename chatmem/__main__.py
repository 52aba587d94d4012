from chatmem.cli import main

main()
