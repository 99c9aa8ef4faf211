"""A throwaway redis-server (Debian redis-server) on a free loopback port, persisting nothing:
shared by the benchmarks of the remote tier (bench/core/fleet.py, bench/mpi/run.py)."""
import socket
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(workdir):
    """Starts the server with `workdir` as its folder; returns (process, port) once it accepts
    connections. SystemExit when it does not start within 5 s."""
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir, "--loglevel", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(500):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return server, port
        except OSError:
            time.sleep(0.01)
    server.kill()
    raise SystemExit("redis-server did not start")
