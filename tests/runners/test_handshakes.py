"""The engine's listeners on the cluster network (nodes calling back, nodes' gateway relays) under
a flood of connections that never say who they are: they hold a bounded number of the engine's
descriptors, and a node that connects during the flood still gets in."""

from __future__ import annotations

import os
import socket
from decimal import Decimal

import pytest
import trio
from support.gateway import open_meter

from benchtui.runners.kit.gateway import open_gateway
from benchtui.runners.kit.handshakes import Handshakes
from benchtui.runners.kit.ray.callback import CallbackListener

LIMIT = 16
STRANGERS = 200


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def flood(address: tuple[str, int], handshakes: Handshakes) -> list[socket.socket]:
    """STRANGERS silent connections, accepted by the engine (not just queued in its backlog)."""
    # From a thread: past the listener's backlog a connect waits for the engine's loop to accept.
    strangers = await trio.to_thread.run_sync(
        lambda: [socket.create_connection(address) for _ in range(STRANGERS)]
    )
    with trio.fail_after(30):
        while handshakes.evicted < STRANGERS - LIMIT:
            await trio.sleep(0.01)
    return strangers


@pytest.mark.trio
async def test_silent_strangers_at_the_callback_port_hold_few_descriptors_and_a_node_gets_in():
    listener = CallbackListener()
    listener.handshakes = Handshakes(LIMIT)
    async with trio.open_nursery() as nursery:
        await nursery.start(listener.serve, "127.0.0.1")
        token, arrivals = listener.expect()
        before = open_fds()
        strangers = await flood(listener.address, listener.handshakes)
        held = open_fds() - before - STRANGERS  # this process holds the strangers' ends too
        assert held <= LIMIT + 4, held
        node = await trio.open_tcp_stream(*listener.address)
        await node.send_all(token.encode() + b"\n")
        with trio.fail_after(5):
            arrival = await arrivals.receive()
        arrival.finished.set()
        await node.aclose()
        for s in strangers:
            s.close()
        nursery.cancel_scope.cancel()


@pytest.mark.trio
async def test_silent_strangers_at_the_gateways_meter_port_hold_few_descriptors_and_a_relay_gets_in():
    meter, _, _ = open_meter(Decimal("1"))
    async with open_gateway(nodes=True) as gateway, gateway.session(meter, meter._model, "sk-x"):
        node = gateway.nodes
        assert node is not None
        gateway.node_handshakes = Handshakes(LIMIT)
        before = open_fds()
        strangers = await flood((node.host, node.port), gateway.node_handshakes)
        held = open_fds() - before - STRANGERS
        assert held <= LIMIT + 4, held
        with trio.fail_after(30):
            address = await trio.to_thread.run_sync(node.start)  # a node's relay: it shows the secret
        assert address.startswith("127.0.0.1:")
        for s in strangers:
            s.close()
