"""Independent references for the tests, written here in plain Python: a DIMACS reader, BFS and
Dijkstra."""

import heapq
from collections import deque


def read_dimacs(path):
    """Vertices and arcs (u, v, w), 0-based, of a DIMACS shortest-path file."""
    n, arcs = 0, []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == "p":
                n = int(parts[2])
            elif parts and parts[0] == "a":
                arcs.append((int(parts[1]) - 1, int(parts[2]) - 1, int(parts[3])))
    return n, arcs


def bfs_levels(n, arcs, source):
    adj = [[] for _ in range(n)]
    for u, v, _ in arcs:
        adj[u].append(v)
    level = [-1] * n
    level[source] = 0
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for v in adj[u]:
            if level[v] < 0:
                level[v] = level[u] + 1
                queue.append(v)
    return level


def dijkstra(n, arcs, source):
    adj = [[] for _ in range(n)]
    for u, v, w in arcs:
        adj[u].append((v, w))
    dist = [None] * n
    heap = [(0, source)]
    while heap:
        d, u = heapq.heappop(heap)
        if dist[u] is not None:
            continue
        dist[u] = d
        for v, w in adj[u]:
            if dist[v] is None:
                heapq.heappush(heap, (d + w, v))
    return [-1 if d is None else d for d in dist]
