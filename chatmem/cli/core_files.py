"""No core file of a chatmem process: one would keep its secrets on disk in the clear.

A crash (a native library's: llama.cpp, SQLCipher) with core dumps on writes the process's
memory to a file in the working directory (or to systemd-coredump's store, for days): the
history's key, the API key and the decrypted history, next to the history that encryption
was meant to keep unreadable. systemd-coredump reads the process's core limit too and keeps
nothing under a page. Only the soft limit is lowered: commands chatmem runs
(key_command, clipboard_command) inherit it, and the shell's own is left as it was.
"""

from __future__ import annotations

import sys


def no_core_files() -> None:
    if sys.platform == "win32":
        return  # no core limit: Windows Error Reporting keeps no memory by default
    import resource

    try:
        _, hard = resource.getrlimit(resource.RLIMIT_CORE)
        resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    except (ValueError, OSError):
        pass  # a limit the system does not let this process lower: nothing else to do
