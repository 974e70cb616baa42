"""Gather p50 / p99 (µs) per unit of one or more coop bench folders, side by side:
gathers.py NAME=FOLDER ..."""
import json, sys
cols = [a.split('=', 1) for a in sys.argv[1:]]
rows = {}
for name, folder in cols:
    for line in open(folder + '/units.jsonl'):
        d = json.loads(line)
        g = d.get('gather_ms')
        if not g: continue
        key = d['key'].replace('multitasking/cooperative/', '').replace('/periodic', '')
        rows.setdefault(key, {})[name] = (g['median'] * 1e3, g['p99'] * 1e3, d.get('slowdown'))
print('| unit | ' + ' | '.join(f'{n} p50 / p99 (slowdown)' for n, _ in cols) + ' |')
print('|---|' + '---|' * len(cols))
for key, v in rows.items():
    cells = [f'{v[n][0]:.0f} / {v[n][1]:.0f} ({v[n][2]:.3f})' if n in v else '—' for n, _ in cols]
    print(f'| {key} | ' + ' | '.join(cells) + ' |')
