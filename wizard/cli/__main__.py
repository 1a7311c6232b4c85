"""``python -m wizard.cli`` runs the command line as the ``yichui`` script does."""
from wizard.cli import main

main()
