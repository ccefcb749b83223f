"""``python -m culturekb ...``: the same as the ``culturekb`` command (for an environment whose scripts folder is not
on PATH)."""

from culturekb.cli import main

if __name__ == "__main__":
    main()
