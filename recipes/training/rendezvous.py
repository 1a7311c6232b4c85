"""Entry point of the rendezvous check every node runs before training:
``python -m recipes.training.rendezvous --nodes N --node-rank R --master ADDR:PORT --timeout S``.

Node 0 opens torch's TCPStore on ADDR:PORT (the port torch.distributed.run then uses for training), every node
joins, and one gloo all-reduce of a 1 per node checks the data path between all of them (gloo connects every pair,
so a firewall between two workers fails here too, not an hour later). Prints one JSON line
``{"nodes": N, "hosts": [...], "seconds": t}`` and exits 0; on failure prints a one-line reason and exits 2.
"""
from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from datetime import timedelta


def check(nodes: int, node_rank: int, addr: str, port: int, timeout_s: float) -> dict:
    """Join the rendezvous and all-reduce one tensor. Raises RuntimeError (torch's DistStoreError / gloo errors)
    when the nodes do not all arrive within ``timeout_s`` seconds."""
    import torch
    import torch.distributed as dist

    t0 = time.time()
    store = dist.TCPStore(addr, port, nodes, is_master=node_rank == 0, timeout=timedelta(seconds=timeout_s),
                          wait_for_workers=True)
    dist.init_process_group("gloo", store=store, rank=node_rank, world_size=nodes,
                            timeout=timedelta(seconds=timeout_s))
    try:
        ones = torch.ones(1)
        dist.all_reduce(ones)
        hosts: list = [None] * nodes
        dist.all_gather_object(hosts, socket.gethostname())
        dist.barrier()
    finally:
        dist.destroy_process_group()
        del store
    return {"nodes": int(ones.item()), "hosts": hosts, "seconds": round(time.time() - t0, 2)}


def split_hosts(text: str) -> list[str]:
    """``"a, b,c"`` → ``["a", "b", "c"]``: the comma-separated host list of the choose_strategy step."""
    return [h.strip() for h in text.split(",") if h.strip()]


def is_local_address(host: str) -> bool:
    """Whether ``host`` names this machine (a socket can bind to it)."""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    for family, _, _, _, sockaddr in infos:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind((sockaddr[0], 0))
            return True
        except OSError:
            continue
    return False


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m recipes.training.rendezvous")
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--node-rank", type=int, required=True)
    p.add_argument("--master", required=True, help="ADDR:PORT of node 0")
    p.add_argument("--timeout", type=float, default=900.0)
    a = p.parse_args(argv)
    addr, _, port = a.master.rpartition(":")
    try:
        out = check(a.nodes, a.node_rank, addr, int(port), a.timeout)
    except Exception as e:  # torch raises several types here (DistStoreError, RuntimeError, DistNetworkError)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"rendezvous at {a.master} failed for node {a.node_rank} of {a.nodes}: {first[:300]}", file=sys.stderr)
        return 2
    if out["nodes"] != a.nodes:
        print(f"rendezvous at {a.master}: {out['nodes']} of {a.nodes} nodes answered", file=sys.stderr)
        return 2
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
