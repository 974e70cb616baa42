import sys, glob, statistics as st
M48 = (1 << 48) - 1
# The clock offset is taken from the membership events within this many ns of a request: the two
# clocks drift apart by microseconds over seconds.
WINDOW = int(float(__import__("os").environ.get("WINDOW_MS", "2000")) * 1e6)
def pct(v, p):
    v = sorted(v); return v[min(len(v)-1, int(p/100*len(v)))] if v else float('nan')
# --apps a,b,...: the run's pairs in order, each measured at k = 1, N/4, N/2, N - 1 in turn (as
# a multitasking configuration's units run); rows are then split by pair.
apps = None
args = sys.argv[1:]
if args and args[0] == '--apps':
    apps = args[1].split(','); args = args[2:]
rows = []
for path in args:
    jobs = []; cur = None
    for line in open(path):
        f = line.split()
        if f[0] == 'J': cur = {'n': int(f[1]), 'ev': []}; jobs.append(cur); continue
        if f[0] == 'X': continue  # a job's destructor ran (a marker of the diagnostic build)
        cur['ev'].append(f)
    # offset candidates: (host, host - device) for every O
    offs = []
    for j in jobs:
        for e in j['ev']:
            if e[0] == 'O': offs.append((int(e[1]), int(e[1]) - int(e[2])))
    offs.sort()
    import bisect
    hosts = [o[0] for o in offs]
    def offset(h):
        lo = bisect.bisect_left(hosts, h - WINDOW); hi = bisect.bisect_right(hosts, h + WINDOW)
        return min(o[1] for o in offs[lo:hi])
    for j in jobs:
        ev = sorted(j['ev'], key=lambda e: int(e[1]))
        for i, e in enumerate(ev):
            if e[0] != 'T': continue
            h_req, t, m = int(e[1]), int(e[2]), int(e[3])
            if t >= m: continue
            seen = None; out = None; mm = m
            for g in ev[i+1:]:
                if g[0] == 'T': break
                if g[0] == 'S' and seen is None: seen = g
                if g[0] == 'O':
                    mm = int(g[3])
                    if mm <= max(t, 1): out = g; break
            if out is None: continue
            off = offset(h_req)
            d_out = int(out[2]); h_out = int(out[1])
            r = {'n': j['n'], 'k': m - t, 'total': (h_out - h_req)/1e3, 'flag': out[4]}
            r['out_host'] = (h_out - (d_out + off))/1e3
            if seen is not None:
                s48 = int(seen[2]); d_seen = (d_out & ~M48) | s48
                if d_seen > d_out + (1 << 47): d_seen -= 1 << 48
                r['req_seen'] = (d_seen + off - h_req)/1e3
                r['seen_out'] = (d_out - d_seen)/1e3
                r['seen_host_lag'] = (int(seen[1]) - (d_seen + off))/1e3
            rows.append(r)
def bucket(r):
    k, n = r['k'], r['n']
    if k == 1: return 'k=1'
    if k >= n - 1: return 'N-1'
    return 'N/4' if k <= n * 3 // 8 else 'N/2'
def report(rows):
    for b in ['k=1', 'N/4', 'N/2', 'N-1']:
        rs = [r for r in rows if bucket(r) == b]
        if not rs: continue
        print(f"{b}: {len(rs)} requests, committed at a barrier {sum(r['flag']=='1' for r in rs)}")
        for key in ['total', 'req_seen', 'seen_out', 'out_host', 'seen_host_lag']:
            v = [r[key] for r in rs if key in r]
            if v: print(f"  {key:14s} p50 {pct(v,50):8.1f}  p90 {pct(v,90):8.1f}  p99 {pct(v,99):8.1f}  max {max(v):8.1f} us  (n={len(v)})")
        bar = [r for r in rs if r['flag']=='1']; off = [r for r in rs if r['flag']!='1']
        for name, g in (('barrier', bar), ('offer', off)):
            v = [r['total'] for r in g]
            if v: print(f"  total via {name:8s} p50 {pct(v,50):8.1f} p90 {pct(v,90):8.1f} (n={len(v)})")

if apps is None:
    report(rows)
else:
    # Segments of consecutive requests in one k bucket are the units, in the configuration's order.
    segs = []
    for r in rows:
        if not segs or bucket(segs[-1][-1]) != bucket(r): segs.append([])
        segs[-1].append(r)
    for a, name in enumerate(apps):
        print(f"== {name}")
        report([r for s_ in segs[4 * a:4 * a + 4] for r in s_])
