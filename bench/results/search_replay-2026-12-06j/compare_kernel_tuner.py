import re,sys,glob,os,subprocess
# Kernel Tuner rows: latest 20-seed row per (space, strategy), random sampling left out; attune rows from argv[1].
files=sorted(glob.glob('bench/results/**/*.md',recursive=True), key=lambda f: subprocess.run(['git','log','-1','--format=%ct','--',f],capture_output=True,text=True).stdout.strip() or '0')
kt={}
row=re.compile(r'^\| (\S+) \| (\d+) \| kernel_tuner (\w+)[^|]*\| ([^|]+)\| ([^|]+)\| (\d+)/(\d+) \|')
for f in files:
    for line in open(f):
        m=row.match(line)
        if not m: continue
        sp,_,st,m1,m2,r,n=m.groups()
        if st=='random_sample' or n!='20': continue
        v=m2.strip(); v=float(v) if re.match(r'^[\d.]+$',v) else float('inf')
        kt[(sp,st)]=(v,int(r))
best={}
for (sp,st),(v,r) in kt.items():
    if sp not in best or v<best[sp][0]: best[sp]=(v,st)
att={}
arow=re.compile(r'^\| (\S+) \| (\d+) \| mcts_repair[^|]*\| ([^|]+)\| ([^|]+)\| (\d+)/(\d+) \|')
for line in open(sys.argv[1]):
    m=arow.match(line)
    if m:
        sp,_,m1,m2,r,n=m.groups(); v=m2.strip(); att[sp]=(float(v) if re.match(r'^[\d.]+$',v) else float('inf'), int(r))
met=miss=0
for sp in sorted(att):
    if sp not in best: continue
    a,r=att[sp]; k,st=best[sp]
    ok = a<=k and r>=19
    met+=ok; miss+=not ok
    if not ok: print(f"MISS {sp}: {a:g} ({r}/20) vs {k:g} {st}")
print(f"met {met} of {met+miss} spaces with Kernel Tuner rows")
