"""Request -> first task block (p50 and p99, us) per run of coop_bench_gpu --only stages,
prev and new side by side: python3 stages.py tests"""
import json, sys
from collections import defaultdict
folder = sys.argv[1]
rows = defaultdict(lambda: defaultdict(list))
for which in ('prev', 'new'):
    for r in (1, 2, 3):
        j = json.load(open(f'{folder}/{which}-stages-{r}.json'))
        for run in j['stages']['runs']:
            for row in run['rows']:
                key = (run['job_iteration_work'], row['mechanism'], row['k'])
                s = row['request_to_first_task_block_us']
                rows[key][which].append((s['median'], s['p99']))
print('| offer work | mechanism | k | prev p50 | new p50 | prev p99 | new p99 |')
print('|---|---|---|---|---|---|---|')
for key in sorted(rows):
    cell = lambda w, i: ' '.join(f'{x[i]:.1f}' for x in rows[key][w])
    print(f'| {key[0]} | {key[1]} | {key[2]} | {cell("prev", 0)} | {cell("new", 0)} | '
          f'{cell("prev", 1)} | {cell("new", 1)} |')
