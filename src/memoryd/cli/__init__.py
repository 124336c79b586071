"""The command-line face: Typer commands that parse, make one engine call, print."""
