"""A task's gather on the host and device, from a diagnostic build's two logs (steps-6.sh):
host-PID.txt (R: the request taken, D: dispatch made the waiter whole, G: the grant seen by the
task's thread) and stamps-PID.txt (T: the job's target sent, O: the commit's event handled).
usage: analyze_host.py host-PID.txt stamps-PID.txt"""
import bisect, sys
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(p / 100 * len(v)))]
host = [l.split() for l in open(sys.argv[1]) if l.strip()]
ev = {k: sorted(int(f[1]) for f in host if f[0] == k) for k in 'RDG'}
T, O = [], []
for l in open(sys.argv[2]):
    f = l.split()
    if not f: continue
    if f[0] == 'T' and int(f[2]) < int(f[3]): T.append(int(f[1]))  # a target below M: a gather
    if f[0] == 'O': O.append(int(f[1]))
T.sort(); O.sort()
def after(xs, t):
    i = bisect.bisect_left(xs, t)
    return xs[i] if i < len(xs) else None
def before(xs, t):
    i = bisect.bisect_right(xs, t)
    return xs[i - 1] if i else None
rows = {'R -> T (request to target sent)': [], 'T -> O (device: sent to commit handled)': [],
        'O -> D (commit handled to waiter whole)': [], 'D -> G (grant to the task thread)': [],
        'R -> G (coop bench\'s gather)': [], 'R -> G, no gather (capacity free)': []}
for r in ev['R']:
    g = after(ev['G'], r); d = after(ev['D'], r); t = after(T, r)
    if g is None or d is None: continue
    if t is None or t > d:  # no target lowered for this request: it was granted at once
        rows['R -> G, no gather (capacity free)'].append((g - r) / 1e3); continue
    o = before(O, d)
    rows['R -> T (request to target sent)'].append((t - r) / 1e3)
    if o is not None and o >= t:
        rows['T -> O (device: sent to commit handled)'].append((o - t) / 1e3)
        rows['O -> D (commit handled to waiter whole)'].append((d - o) / 1e3)
    rows['D -> G (grant to the task thread)'].append((g - d) / 1e3)
    rows['R -> G (coop bench\'s gather)'].append((g - r) / 1e3)
for k, v in rows.items():
    if v: print(f"{k:42s} p50 {pct(v,50):8.1f} p90 {pct(v,90):8.1f} p99 {pct(v,99):8.1f} us (n={len(v)})")

# With visit 6's build, the steps in between (host-PID.txt's other letters): i (the waiter
# queued), e (dispatch done), t (Scheduler::set_target), then the device (T -> O), then on the
# service thread M (record_membership), m (membership_changed), l (the scheduler's lock taken),
# D, u (lock released), and on the task's thread s (its spin saw the dispatch), k (its lock
# taken), G. Each stamp costs the host ~0.2-0.4 us itself.
steps = {}
allhost = sorted((int(f[1]), f[0]) for f in host)
times = [h[0] for h in allhost]
if any(c == 'i' for _, c in allhost):
    for r in ev['R']:
        seg = []
        for t, c in allhost[bisect.bisect_left(times, r):]:
            seg.append((t, c))
            if c == 'G': break
        if seg[-1][1] != 'G': continue
        first, last = {}, {}
        for t, c in seg:
            first.setdefault(c, t); last[c] = t
        t_sent = after(T, r)
        if t_sent is None or t_sent > seg[-1][0]: continue
        if any(c not in first for c in 'iet') or any(c not in last for c in 'MmlDusk'): continue
        o = before(O, last['D'])
        marks = [('R', r), ('i', first.get('i')), ('e', first.get('e')), ('t', first.get('t')),
                 ('T', t_sent), ('O', o)] + [(c, last.get(c)) for c in 'MmlDusk'] + [('G', seg[-1][0])]
        prev = None
        for name, t in marks:
            if t is None: continue
            if prev: steps.setdefault(prev[0] + ' -> ' + name, []).append((t - prev[1]) / 1e3)
            prev = (name, t)
    print('steps:')
    for k, v in steps.items():
        print(f"  {k:8s} p50 {pct(v,50):7.2f} p90 {pct(v,90):7.2f} p99 {pct(v,99):7.2f} us (n={len(v)})")
