"""An A/B from one visit (coop_bench_gpu --only stages / gather, each run with a switch at 0 and 1
alternating, its value in the file name: stages-SWITCH0-1.json ...): p50 and p99 per run,
microseconds. By default the control relay (COOP_CUDA_CONTROL_RELAY, files *-relay*-*).
usage: python3 summarize.py FOLDER [SWITCH "TITLE" "LABEL0,LABEL1"]"""
import glob, json, re, sys
from collections import defaultdict

folder = sys.argv[1]
switch, versus, labels = (sys.argv[2:5] if len(sys.argv) > 4 else
                          ('relay', 'relay off vs on', 'off,on'))
label0, label1 = labels.split(',')
HEAD = f'{label0} p50 | {label1} p50 | {label0} p99 | {label1} p99 |'
STAGES = [('request_to_seen_on_device_us', 'request -> seen on device'),
          ('request_to_first_task_block_us', 'request -> first task block'),
          ('request_to_task_done_us', 'request -> task done')]


def runs(kind):
    out = defaultdict(list)  # switch value -> [json]
    for f in sorted(glob.glob(f'{folder}/{kind}-{switch}*-*.json')):
        value = re.search(switch + r'(\d)', f).group(1)
        out[value].append(json.load(open(f)))
    return out


def cells(values):
    return ' '.join(f'{v:.1f}' for v in values)


stages = runs('stages')
if stages:
    rows = defaultdict(lambda: defaultdict(list))
    ns = {}
    for value, js in stages.items():
        for j in js:
            for run in j['stages']['runs']:
                for row in run['rows']:
                    ns[value] = row['N']
                    key = (run['job_iteration_work'], row['mechanism'],
                           {1: '1'}.get(row['k'], 'N/4' if row['k'] == row['N'] // 4 else
                                        'N/2' if row['k'] == row['N'] // 2 else 'N-1'))
                    for field, _ in STAGES:
                        rows[key][(value, field)].append((row[field]['median'], row[field]['p99']))
    print(f'N: {ns}')
    for field, title in STAGES:
        print(f'\n{title} (p50 per run; p99 per run), {versus}\n')
        print(f'| offer work | mechanism | k | {HEAD}')
        print('|---|---|---|---|---|---|---|')
        for key in sorted(rows, key=lambda k: (k[0], k[1], ['1', 'N/4', 'N/2', 'N-1'].index(k[2]))):
            off, on = rows[key][('0', field)], rows[key][('1', field)]
            print(f'| {key[0]} | {key[1]} | {key[2]} | {cells(x[0] for x in off)} | '
                  f'{cells(x[0] for x in on)} | {cells(x[1] for x in off)} | {cells(x[1] for x in on)} |')

gathers = runs('gather')
if gathers:
    print('\ngather (coop_bench_gpu --only gather): gather_us p50 per run; p99 per run\n')
    print(f'| offer work | k | {HEAD}')
    print('|---|---|---|---|---|---|')
    rows = defaultdict(lambda: defaultdict(list))
    for value, js in gathers.items():
        for j in js:
            for row in j['gather']:
                n, k = row['N'], row['k']
                label = '1' if k == 1 else 'N/4' if k == n // 4 else 'N/2' if k == n // 2 else 'N-1'
                g = row['gather_us']
                rows[(row['work_per_iteration'], label)][value].append((g['median'], g['p99']))
    for key in sorted(rows, key=lambda k: (k[0], ['1', 'N/4', 'N/2', 'N-1'].index(k[1]))):
        off, on = rows[key]['0'], rows[key]['1']
        print(f'| {key[0]} | {key[1]} | {cells(x[0] for x in off)} | {cells(x[0] for x in on)} | '
              f'{cells(x[1] for x in off)} | {cells(x[1] for x in on)} |')
