"""`python -m pilot`: the same CLI as the `pilot` console script (for hosts that launch servers by module)."""

from pilot.cli import main

if __name__ == "__main__":
    main(prog_name="pilot")
