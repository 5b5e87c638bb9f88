"""Between two tasks, the Docker kennel keeps exactly its init and its forwarder.

Both are known by PID, recorded when the container starts (before any task could run):
a process's name and command line are its own to choose, so a hostile one could look
like the forwarder. While the container runs, those PIDs cannot be reused: the forwarder
is init's only child and init exits with it, taking the container down.

The sweep is a ``docker exec`` of ``sh`` that uses only builtins while it kills (a glob
of /proc, ``read``, ``kill``), so it forks nothing that could be mistaken for a task
process and works when the pids limit is full. It repeats until a round finds nothing
left (a process forking as fast as it can loses: each round kills every child born
during the last), then removes every temporary file a task could leave: /tmp (the CLI
state is copied in again before each task), /dev/shm, POSIX message queues and SysV IPC
objects. If anything survives, it says so and exits non-zero: the caller replaces the
container.
"""

from __future__ import annotations

ROUNDS = 60

# Prints init's children: at start, the forwarder alone (this exec's own processes are
# not init's children: ``docker exec`` starts them from outside the container).
FORWARDER_SCRIPT = (
    "for d in /proc/[0-9]*; do { read -r line < $d/stat; } 2>/dev/null || continue; "
    'rest=${line##*) }; set -- $rest; [ "$2" = 1 ] && echo ${d#/proc/}; done; true'
)

_TEMP = "/tmp/* /tmp/.[!.]* /tmp/..?* /dev/shm/* /dev/shm/.[!.]* /dev/shm/..?* /dev/mqueue/*"


def sweep_script(keep: tuple[int, ...]) -> str:
    """Kill everything but ``keep`` (init and the forwarder) and this shell; clean temp."""
    keep_words = " ".join(str(p) for p in keep)
    return (
        f'keep=" {keep_words} $$ "; round=0; '
        "while :; do left=''; "
        "for d in /proc/[0-9]*; do p=${d#/proc/}; "
        'case "$keep" in *" $p "*) continue;; esac; '
        "{ read -r line < $d/stat; } 2>/dev/null || continue; "
        "rest=${line##*) }; set -- $rest; "
        '[ "$1" = Z ] && continue; '  # a zombie runs nothing; init reaps it
        'kill -KILL $p 2>/dev/null; left="$left $p"; done; '
        '[ -z "$left" ] && break; '
        f"round=$((round+1)); [ $round -ge {ROUNDS} ] && "
        '{ echo "survivors:$left"; exit 3; }; '
        "sleep 0.02 2>/dev/null; done; "
        # A folder its owner locked (chmod 000) is opened again first, so rm can go in.
        f"chmod -R u+rwx /tmp /dev/shm 2>/dev/null; rm -rf {_TEMP} 2>/dev/null; "
        "ipcrm -a 2>/dev/null; "
        # Whatever could not be removed is reported: the next task must not find it.
        f'for f in {_TEMP}; do [ -e "$f" ] && {{ echo "left: $f"; exit 4; }}; done; '
        "true"
    )


def parse_forwarder(output: str) -> int:
    pids = [int(p) for p in output.split() if p.isdigit()]
    if len(pids) != 1:
        raise ValueError(f"expected the forwarder as init's only child, found {pids}")
    return pids[0]


__all__ = ["FORWARDER_SCRIPT", "parse_forwarder", "sweep_script"]
