import re,sys,glob,subprocess,os
# usage: cmp.py ATTUNE_REPORT.md {0-19|20-39}   (run from the repo root)
# Kernel Tuner's best strategy per space (random sampling left out), median evaluations to 2%:
# 0-19: latest 20-seed row per (space, strategy) in bench/results except the seeds-20-39 file
# (as compare_kernel_tuner.py of 06j did before that file existed); 20-39: that file alone.
# attune rows split into cold and prior; a space without a prior counts by its cold row.
row=re.compile(r'^\| (\S+) \| (\d+) \| kernel_tuner (\w+)[^|]*\| ([^|]+)\| ([^|]+)\| (\d+)/(\d+) \|')
same='bench/results/search_replay-2026-12-07b/kernel_tuner-seeds-20-39.md'
if sys.argv[2]=='20-39': files=[same]
else:
    files=[f for f in glob.glob('bench/results/**/*.md',recursive=True) if f!=same and 'search_replay-2026-12-07c' not in f]
    files.sort(key=lambda f: subprocess.run(['git','log','-1','--format=%ct','--',f],capture_output=True,text=True).stdout.strip() or '0')
kt={}
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
arow=re.compile(r'^\| (\S+) \| (\d+) \| (mcts_repair[^|]*)\| ([^|]+)\| ([^|]+)\| (\d+)/(\d+) \|')
cold={};prior={}
for line in open(sys.argv[1]):
    m=arow.match(line)
    if m:
        sp,_,st,m1,m2,r,n=m.groups(); v=m2.strip(); v=(float(v) if re.match(r'^[\d.]+$',v) else float('inf'), int(r))
        (prior if 'prior' in st else cold)[sp]=v
for name,d in (('cold',cold),('prior',{**cold,**prior})):
    met=0;tot=0;miss=[]
    for sp in sorted(d):
        if sp not in best: continue
        a,r=d[sp]; k,st=best[sp]; tot+=1
        if a<=k and r>=19: met+=1
        else: miss.append(f"{sp} {a:g} vs {k:g}")
    print(f"{name}: met {met} of {tot}; misses: "+'; '.join(miss))
