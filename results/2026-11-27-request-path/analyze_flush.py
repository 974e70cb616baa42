import sys
ft=[]
for path in sys.argv[1:]:
    last=None
    for line in open(path):
        f=line.split()
        if f[0]=='J': last=None
        elif f[0]=='T': last=int(f[1]) if int(f[2])<int(f[3]) else None
        elif f[0]=='F' and last is not None: ft.append((int(f[1])-last)/1e3); last=None
ft.sort(); n=len(ft)
print(n, "flush API us p10 %.1f p50 %.1f p90 %.1f p99 %.1f max %.1f"%(ft[n//10],ft[n//2],ft[int(n*.9)],ft[int(n*.99)],ft[-1]))
