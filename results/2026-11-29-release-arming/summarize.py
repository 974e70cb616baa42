"""The release arming A/B (coop_bench_gpu --only stages with the scheduler's release arming as
landed and with COOP_EXP_NO_ARM=1, alternating): the control relay folder's summarize.py on the
noarm switch. usage: python3 summarize.py FOLDER"""
import os, subprocess, sys

script = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                      '2026-11-29-control-relay', 'summarize.py')
sys.exit(subprocess.call([sys.executable, script, sys.argv[1], 'noarm',
                          'arming on (as landed) vs off (COOP_EXP_NO_ARM=1)', 'armed,not armed']))
