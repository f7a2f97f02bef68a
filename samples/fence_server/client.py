#!/usr/bin/env python3
"""client.py [--port N] [--elements N] [--start SERVER] [FACTOR ...]

Sends each FACTOR ("<factor>\\n") to a fence_server on 127.0.0.1:PORT and prints the replies,
checking each against factor * n * (n - 1) / 2 for n = --elements (the server's, 16384 by
default). With --start SERVER it first starts `SERVER --serve PORT --elements N` on a free port
and stops it at the end (the samples suite runs it that way). Exit code 1 on a wrong reply.
"""
import argparse
import socket
import subprocess
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--elements", type=int, default=1 << 14)
    parser.add_argument("--start")
    parser.add_argument("factors", nargs="*", type=int, default=[1, 2, 3, 1000, -7])
    args = parser.parse_args()
    port = args.port or free_port()

    server = None
    if args.start:
        server = subprocess.Popen([args.start, "--serve", str(port), "--elements", str(args.elements)],
                                  stdout=subprocess.PIPE, text=True)
        print(server.stdout.readline().rstrip())  # "serving on ...": it listens now
    wrong = 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
            replies = connection.makefile("r")
            n = args.elements
            for factor in args.factors:
                connection.sendall(f"{factor}\n".encode())
                reply = int(replies.readline())
                expected = factor * n * (n - 1) // 2
                wrong += reply != expected
                print(f"{factor} -> {reply}{'' if reply == expected else f' (expected {expected})'}")
    finally:
        if server:
            server.terminate()
            server.wait(timeout=30)
    print("OK" if wrong == 0 else f"{wrong} wrong replies")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
