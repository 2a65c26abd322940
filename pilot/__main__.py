"""`python -m pilot`: the same CLI as the `pilot` console script (for hosts that launch servers by module)."""

from pilot.cli import heap

heap.pause()  # before the imports: pilot.cli.heap says why

from pilot.cli import main  # noqa: E402

if __name__ == "__main__":
    main(prog_name="pilot")
