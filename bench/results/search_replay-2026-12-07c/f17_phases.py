import csv,sys,collections,statistics
rows=collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    rows[(r['strategy'],int(r['seed']))].append(r)
opt=None
for k,v in rows.items():
    for r in v:
        t=float(r['time_us']) if r['time_us'] else 1e18
        opt=t if opt is None else min(opt,t)
bystrat=collections.defaultdict(list)
for (s,seed),v in sorted(rows.items()):
    first_pocket=None; to2=None; n16=0
    for r in v:
        c=dict(x.split('=') for x in r['config'].split(','))
        pocket=c['block_size_x']=='16' and c['use_padding']=='0' and c['tile_size_x']!='1'
        if c['block_size_x']=='16' and to2 is None: n16+=1
        if pocket and first_pocket is None: first_pocket=int(r['evaluation'])
        if to2 is None and float(r['best_us'])<=opt*1.02: to2=int(r['evaluation'])
    bystrat[s].append((first_pocket,to2,n16))
for s,v in bystrat.items():
    print(s, 'pocket med',statistics.median([x[0] or 9999 for x in v]),'to2 med',statistics.median([x[1] or 9999 for x in v]))
    print('   ',[(a,b,c) for a,b,c in v])
