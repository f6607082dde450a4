#!/usr/bin/env python3
"""A small fault-injecting TCP proxy for scripts/chaos (standard library only).

    faultproxy.py LISTEN_PORT TARGET_HOST TARGET_PORT CONTROL_FILE

Forwards every connection on 127.0.0.1:LISTEN_PORT to TARGET_HOST:TARGET_PORT.
CONTROL_FILE, read every 50 ms, holds `delay=SECONDS stall=0|1 reset=N`:

- delay: added before each chunk is passed on, both ways (a slow network);
- stall=1: nothing is passed on until it is 0 again (a network that hangs;
  connections stay open);
- reset: each time N grows, every open connection is closed with a TCP
  reset (a dropped path), and the next ones connect anew.
"""

import asyncio
import socket
import struct
import sys

listen_port, host, port, control = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
state = {"delay": 0.0, "stall": False, "reset": 0}
open_pairs = set()


def read_control():
    try:
        with open(control) as f:
            fields = dict(p.split("=", 1) for p in f.read().split() if "=" in p)
    except OSError:
        return
    state["delay"] = float(fields.get("delay", 0))
    state["stall"] = fields.get("stall", "0") == "1"
    reset = int(fields.get("reset", 0))
    if reset > state["reset"]:
        state["reset"] = reset
        for pair in list(open_pairs):
            for writer in pair:
                abort(writer)


def abort(writer):
    sock = writer.get_extra_info("socket")
    try:
        # Linger 0: close sends RST, not FIN.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            while state["stall"]:
                await asyncio.sleep(0.05)
            if state["delay"]:
                await asyncio.sleep(state["delay"])
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(client_reader, client_writer):
    try:
        server_reader, server_writer = await asyncio.open_connection(host, port)
    except OSError:
        abort(client_writer)
        return
    pair = (client_writer, server_writer)
    open_pairs.add(pair)
    try:
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))
    finally:
        open_pairs.discard(pair)


async def watch_control():
    while True:
        read_control()
        await asyncio.sleep(0.05)


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
    asyncio.ensure_future(watch_control())
    async with server:
        await server.serve_forever()


asyncio.run(main())
