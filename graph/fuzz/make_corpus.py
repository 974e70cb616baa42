#!/usr/bin/env python3
"""Writes the seed corpora of the parser fuzzers, fuzz/corpus/<reader>/.

Seeds come from the real graphs in tests/data/graphs (copies of the shared data folder beside the checkout):
prefixes of rome99.gr and 256_16384.gr (valid ones, with the header fixed to the arcs kept, and
raw cuts), small induced subgraphs of both converted to every format, and hand-written edge
cases. Run from the repository root: python3 fuzz/make_corpus.py (it replaces fuzz/corpus).
The committed corpus stays small (well under 1 MiB): the fuzzers grow their own copy in
build/fuzz/corpus.
"""
import os
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "graphs")
OUT = os.path.join(ROOT, "fuzz", "corpus")


def read_dimacs(name):
    comments, n, arcs = [], 0, []
    with open(os.path.join(DATA, name)) as f:
        for line in f:
            t = line.split()
            if not t:
                continue
            if t[0] == "c":
                comments.append(line.rstrip("\n"))
            elif t[0] == "p":
                n = int(t[2])
            elif t[0] == "a":
                arcs.append((int(t[1]), int(t[2]), int(t[3])))
    return comments, n, arcs


def induced(arcs, k):
    """The arcs among vertices 1..k (1-based), as (u, v, w)."""
    return [(u, v, w) for (u, v, w) in arcs if u <= k and v <= k]


def csr(n, arcs0):
    """0-based CSR (row, col, weight) from 0-based arcs, stable like Graph::from_arcs."""
    row = [0] * (n + 1)
    for u, _, _ in arcs0:
        row[u + 1] += 1
    for v in range(n):
        row[v + 1] += row[v]
    nxt = row[:-1]
    col, wt = [0] * len(arcs0), [0] * len(arcs0)
    for u, v, w in arcs0:
        col[nxt[u]], wt[nxt[u]] = v, w
        nxt[u] += 1
    return row, col, wt


def symmetric(arcs):
    """Both directions, no self loops, one weight per pair (the smallest), 1-based."""
    best = {}
    for u, v, w in arcs:
        if u == v:
            continue
        for a, b in ((u, v), (v, u)):
            best[(a, b)] = min(w, best.get((a, b), w))
    return sorted((a, b, w) for (a, b), w in best.items())


def dimacs(n, arcs, comments=(), eol="\n"):
    lines = list(comments) + [f"p sp {n} {len(arcs)}"] + [f"a {u} {v} {w}" for u, v, w in arcs]
    return (eol.join(lines) + eol).encode()


def metis(n, arcs, fmt="", vweights=None, sizes=False, comment=True):
    """arcs: symmetric, 1-based. fmt: '', '1', '11', '100', ..."""
    adj = [[] for _ in range(n + 1)]
    for u, v, w in arcs:
        adj[u].append((v, w))
    out = ["% METIS graph from coop's fuzz seeds"] if comment else []
    head = f"{n} {len(arcs) // 2}"
    if fmt:
        head += f" {fmt}"
        if vweights and vweights > 1:
            head += f" {vweights}"
    out.append(head)
    ew = fmt.endswith("1")
    for v in range(1, n + 1):
        t = []
        if sizes:
            t.append(str(v % 3 + 1))
        for c in range(vweights or 0):
            t.append(str((v + c) % 5))
        for u, w in adj[v]:
            t.append(str(u))
            if ew:
                t.append(str(w))
        out.append(" ".join(t))
    return ("\n".join(out) + "\n").encode()


def mtx(n, arcs, field="integer", symmetry="general"):
    out = [f"%%MatrixMarket matrix coordinate {field} {symmetry}", "% from coop's fuzz seeds"]
    if symmetry == "symmetric":
        arcs = [(u, v, w) for (u, v, w) in arcs if u >= v]
    out.append(f"{n} {n} {len(arcs)}")
    for u, v, w in arcs:
        if field == "pattern":
            out.append(f"{u} {v}")
        elif field == "real":
            out.append(f"{u} {v} {w / 4:.3e}" if w % 2 else f"{u} {v} {w}.25")
        else:
            out.append(f"{u} {v} {w}")
    return ("\n".join(out) + "\n").encode()


def galois(n, arcs, weights=True):
    row, col, wt = csr(n, [(u - 1, v - 1, w) for u, v, w in arcs])
    m = len(col)
    b = struct.pack("<4Q", 1, 4 if weights else 0, n, m)
    b += struct.pack(f"<{n}Q", *row[1:])
    b += struct.pack(f"<{m}I", *col)
    if m % 2:
        b += b"\0\0\0\0"
    if weights:
        b += struct.pack(f"<{m}I", *wt)
    return b


def coop_binary(n, arcs):
    row, col, wt = csr(n, [(u - 1, v - 1, w) for u, v, w in arcs])
    m = len(col)
    return (b"COOPCSR1" + struct.pack("<2Q", n, m) + struct.pack(f"<{n + 1}I", *row) +
            struct.pack(f"<{m}I", *col) + struct.pack(f"<{m}I", *wt))


def main():
    rc, rn, rarcs = read_dimacs("rome99.gr")
    gc, gn, garcs = read_dimacs("256_16384.gr")
    rome = induced(rarcs, 120)  # 148 arcs of Rome's road network
    gt = induced(garcs, 24)  # 123 arcs of the GTgraph random graph
    rome_sym, gt_sym = symmetric(rome), symmetric(gt)
    raw_rome = open(os.path.join(DATA, "rome99.gr"), "rb").read()
    raw_gt = open(os.path.join(DATA, "256_16384.gr"), "rb").read()

    seeds = {
        "dimacs": {
            "rome99-head.gr": dimacs(rn, rarcs[:150], rc),
            "256_16384-head.gr": dimacs(gn, garcs[:100], gc),
            "rome99-induced-crlf.gr": dimacs(120, rome, eol="\r\n"),
            "256_16384-induced.gr": dimacs(24, gt),
            "rome99-cut.gr": raw_rome[:3000],  # cut mid-file: too few arcs
            "256_16384-cut.gr": raw_gt[:1500],
            "tiny.gr": b"p sp 1 0\n",
            "self-loop-max-weight.gr": b"c max\np sp 2 2\na 1 1 4294967295\na 2 1 0\n",
            "tabs-blank-lines.gr": b"\nc x\np\tsp\t3 2\n\na 1\t2 7\n  \na 3 2 1",
            "no-header.gr": b"c only comments\n",
        },
        "metis": {
            "rome99-induced.graph": metis(120, rome_sym, "1"),
            "256_16384-induced.graph": metis(24, gt_sym),
            "256_16384-vweights.graph": metis(24, gt_sym, "11", vweights=1),
            "256_16384-ncon2.graph": metis(24, gt_sym, "011", vweights=2, comment=False),
            "256_16384-sizes.graph": metis(24, gt_sym, "111", vweights=1, sizes=True),
            "rome99-cut.graph": metis(120, rome_sym, "1")[:700],
            "tiny.graph": b"1 0\n\n",
            "isolated.graph": b"% two isolated vertices and an edge\n4 1 001\n\n3 9\n2 9\n\n",
        },
        "matrix_market": {
            "rome99-induced.mtx": mtx(120, rome),
            "256_16384-induced-real.mtx": mtx(24, gt, "real"),
            "256_16384-symmetric.mtx": mtx(24, gt_sym, "pattern", "symmetric"),
            "rome99-symmetric-real.mtx": mtx(120, rome_sym, "real", "symmetric"),
            "tiny.mtx": b"%%MatrixMarket matrix coordinate pattern general\n1 1 0\n",
            "values.mtx": b"%%MatrixMarket MATRIX Coordinate REAL General\n%\n\n3 3 4\n"
                          b"1 2 -2.5\n2 3 1e3\n3 1 0.49999\n3 3 4294967295.4\n",
            "array.mtx": b"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
        },
        "galois_binary": {
            "rome99-induced.gr": galois(120, rome),
            "256_16384-induced.gr": galois(24, gt),
            "256_16384-noweights.gr": galois(24, gt[:-1], weights=False),
            "rome99-odd.gr": galois(120, rome[:-1]),
            "tiny.gr": galois(1, []),
        },
        "binary": {
            "rome99-induced.coopcsr": coop_binary(120, rome),
            "256_16384-induced.coopcsr": coop_binary(24, gt),
            "tiny.coopcsr": coop_binary(1, []),
        },
    }
    # read_graph: the first byte picks the file name (fuzz_read_graph.cpp's kNames).
    ext = {"dimacs": 0, "metis": 1, "matrix_market": 3, "galois_binary": 0, "binary": 4}
    seeds["read_graph"] = {}
    for fmt, files in list(seeds.items()):
        if fmt == "read_graph":
            continue
        for name, data in files.items():
            seeds["read_graph"][f"{fmt}-{name}"] = bytes([ext[fmt]]) + data
    seeds["read_graph"]["metis-ext.metis"] = bytes([2]) + seeds["metis"]["tiny.graph"]
    seeds["read_graph"]["unknown.txt"] = bytes([5]) + b"p sp 1 0\n"

    shutil.rmtree(OUT, ignore_errors=True)
    total = 0
    for reader, files in seeds.items():
        os.makedirs(os.path.join(OUT, reader))
        for name, data in files.items():
            with open(os.path.join(OUT, reader, name), "wb") as f:
                f.write(data)
            total += len(data)
    print(f"{sum(len(f) for f in seeds.values())} seeds, {total} bytes in {OUT}")


if __name__ == "__main__":
    main()
