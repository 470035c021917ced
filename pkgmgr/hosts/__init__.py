"""Agent hosts other than Compozy: terva, Eva and Vera (SPEC 13).

- `base.py`: the destination port (`Host`), judged trees, the install tree checksum, the
  filesystem mechanics (staging beside the scanned folder, atomic switch).
- `terva.py`, `eva.py` (`elixir.py`: reading a script without compiling it; `elixir_quoted.py`:
  Elixir's parser reading it, when elixir is installed), `vera.py`: each host's rules, read from
  its own code.
- `detect.py`: the host of a tree, from its manifest file.
- `records.py`: what pkgmgr records of a host install (its table in the scope's state.db).
- `install.py`: the pipeline's host half: prepare (judge) and commit (switch, record); remove,
  enable/disable, adopt.
- `views.py`: what the CLI shows, as values: a host install (`ext status`), a tree judged by its
  host (`ext validate`), a host extension packed (`ext pack`), the hosts and their folders
  (`pkgmgr hosts`), what `adopt` took.
"""

HOSTS = ("compozy", "terva", "eva", "vera")
AGENT_HOSTS = ("terva", "eva", "vera")  # the hosts behind the port of base.py (compozy is pkgmgr's own store)
