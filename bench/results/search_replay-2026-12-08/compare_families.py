import re,sys,glob,os
# usage: compare_families.py base model   (median evaluations to 2%, spaces of more than 256 configs)
here=os.path.dirname(os.path.abspath(__file__))
a,b=sys.argv[1],sys.argv[2]
def load(tag):
    d={}
    for f in glob.glob(f'{here}/seeds100-149-{tag}-*.md'):
        for l in open(f):
            m=re.match(r'^\| (\S+) \| (\d+) \| (mcts_repair[^|]*)\| ([^|]+)\| ([^|]+)\| (\d+)/(\d+) \|',l)
            if m: d[(m[1],'prior' if 'prior' in m[3] else 'cold')]=(m[5].strip(),m[6],int(m[2]))
    return d
A=load(a);B=load(b)
for k in sorted(A):
    if k in B and A[k][2]>256: print(f"{k[0]:40s} {k[1]:5s} {A[k][0]:>5s} -> {B[k][0]:>5s}  ({A[k][1]}/{B[k][1]})")
