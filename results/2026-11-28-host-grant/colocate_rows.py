"""Request p50 / p99 (ms) and background kept per mechanism, one column per
coop_bench_colocate JSON (gzipped): python3 colocate_rows.py colocate/*.json.gz"""
import gzip, json, sys
mechanisms = ['requests-only', 'coop-whole', 'coop-whole-at-request', 'coop-whole-no-pause',
              'interrupt-relaunch', 'green-ctx-64']
files = sorted(sys.argv[1:], key=lambda f: int(f.split('-')[-1].split('.')[0]))
print('| mechanism | ' + ' | '.join(f.split('/')[-1].split('.')[0] for f in files) + ' |')
print('|---|' + '---|' * len(files))
data = [json.load(gzip.open(f)) for f in files]
for m in mechanisms:
    cells = []
    for j in data:
        r = [x for x in j['rows'] if x['mechanism'] == m]
        if not r:
            cells.append('—')
            continue
        L = r[0]['latency_ms']
        cells.append(f"{L['p50']:.3f} / {L['p99']:.3f}, kept {r[0]['background_fraction_of_alone']:.3f}")
    print(f'| {m} | ' + ' | '.join(cells) + ' |')
