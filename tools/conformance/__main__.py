from tools.conformance.cli import main
main()
