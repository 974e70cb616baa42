"""The periodic task asking for the whole device (k = N): gather p50 / p99 (us), the task's
response p99 (ms; its bound is 0.38 ms alone + 60 us), and the app's slowdown (its bound
P/(P-E) + 0.02), per unit and run: python3 whole.py whole"""
import glob, json, sys
folder = sys.argv[1]
rows = {}
for path in sorted(glob.glob(f'{folder}/whole-*-*/units.jsonl')):
    run = path.split('/')[-2].replace('whole-', '')
    for line in open(path):
        d = json.loads(line)
        key = d['key'].replace('multitasking/cooperative/', '').replace('/periodic/k=N', '')
        g, r = d['gather_ms'], d['response_ms']
        bound = d['period_ms'] / (d['period_ms'] - d['gpu_ms']) + 0.02
        rows.setdefault(key, {})[run] = (g['median'] * 1e3, g['p99'] * 1e3,
                                         r['p99'],
                                         d['slowdown'], bound)
runs = sorted({r for v in rows.values() for r in v}, key=lambda r: (r.split('-')[1], r))
print('| unit | ' + ' | '.join(runs) + ' |')
print('|---|' + '---|' * len(runs))
for key, v in rows.items():
    cells = [f'{v[r][0]:.0f} / {v[r][1]:.0f}, {v[r][2]:.3f}, {v[r][3]:.3f}' if r in v else '—'
             for r in runs]
    print(f'| {key} | ' + ' | '.join(cells) + ' |')
print(f'\nbound on the slowdown: {next(iter(rows.values()))[runs[0]][4]:.3f}')
