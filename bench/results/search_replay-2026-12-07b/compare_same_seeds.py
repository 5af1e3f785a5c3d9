import re,glob,sys
# usage: compare_same_seeds.py KERNEL_TUNER_ROWS.md ATTUNE_REPORT.md
# Kernel Tuner rows (one file), best per space
# (random sampling left out); attune rows from the held-out report split into cold and prior.
row=re.compile(r'^\| (\S+) \| (\d+) \| kernel_tuner (\w+)[^|]*\| ([^|]+)\| ([^|]+)\| (\d+)/(\d+) \|')
kt={}
for f in [sys.argv[1]]:
    for line in open(f):
        m=row.match(line)
        if not m: continue
        sp,_,st,m1,m2,r,n=m.groups()
        if st=='random_sample': continue
        v=m2.strip(); v=float(v) if re.match(r'^[\d.]+$',v) else float('inf')
        if sp not in kt or v<kt[sp][0]: kt[sp]=(v,st)
arow=re.compile(r'^\| (\S+) \| (\d+) \| mcts_repair[^|]*\| ([^|]+)\| ([^|]+)\| (\d+)/(\d+) \|')
def load(f):
    d={}
    for line in open(f):
        m=arow.match(line)
        if m:
            sp,_,m1,m2,r,n=m.groups(); v=m2.strip(); d[sp]=(float(v) if re.match(r'^[\d.]+$',v) else float('inf'), int(r))
    return d
rows=[l for l in open(sys.argv[2]) if l.startswith('| ') and 'mcts_repair' in l]
import io
def load_lines(ls):
    d={}
    for line in ls:
        m=arow.match(line)
        if m:
            sp,_,m1,m2,r,n=m.groups(); v=m2.strip(); d[sp]=(float(v) if re.match(r'^[\d.]+$',v) else float('inf'), int(r))
    return d
cold=load_lines([l for l in rows if 'prior' not in l]); prior=load_lines([l.replace(' + prior from others','') for l in rows if 'prior' in l])
print('| space | Kernel Tuner best (seeds 20-39) | attune cold | attune with prior |')
print('|---|---|---:|---:|')
for sp in sorted(kt):
    k,st=kt[sp]
    c=cold.get(sp); p=prior.get(sp)
    f=lambda a: '-' if a is None else f"{a[0]:g} ({a[1]}/20){'' if a[0]<=k and a[1]>=19 else ' miss'}"
    print(f'| {sp} | {k:g} {st} | {f(c)} | {f(p)} |')
