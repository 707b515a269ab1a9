import redis, sys
r = redis.Redis(port=7391)
r.flushall()
r.config_set('list-compress-depth', 0)
cases = {}
r.set('str_raw', b'hello world'); cases['str_raw']=1
r.set('str_int', b'12345'); cases['str_int']=1
r.set('str_int_neg', b'-70000'); 
r.set('str_big_int', b'9223372036854775807')
r.set('str_lzf', b'abcdefghij'*1000)
r.set('str_empty', b'')
r.rpush('list_small', 'a', 'b', '1', '-5', '300', '70000', '5000000000', 'x'*70)
r.rpush('list_plain', 'a', 'y'*10000, 'b')
r.rpush('list_large', *[f'item{i}' for i in range(2000)])
r.sadd('set_int', 1, 2, 3, -4, 100000, 5000000000)
r.sadd('set_str', 'a', 'b', 'c')
r.sadd('set_bigint', *range(600))
r.hset('hash_small', mapping={'f1':'v1','f2':'2','n':'-100'})
r.hset('hash_big', mapping={f'f{i}':f'v{i}' for i in range(600)})
r.hset('hash_longval', mapping={'f':'v'*100})
r.zadd('zset_small', {'a':1, 'b':2.5, 'c':-3, 'd':float('inf'), 'e':float('-inf'), 'f': 1e300, 'g': 0.1})
r.zadd('zset_big', {f'm{i}':i*1.5 for i in range(200)})
r.zadd('zset_big_inf', {'a':float('inf'), 'b':float('-inf'), 'c': 3.25, **{f'm{i}':i for i in range(200)}})
for k in r.keys('*'):
    k = k.decode()
    d = r.dump(k)
    open(k + '.bin','wb').write(d)
    print(k, r.object('encoding', k), len(d), d[:1].hex(), d[-10:-8].hex())
r.config_set('list-compress-depth', 1)
r.delete('list_comp')
r.rpush('list_comp', *[f'item{i}'*3 for i in range(3000)])
d = r.dump('list_comp'); open('list_comp.bin','wb').write(d); print('list_comp', len(d))
r.config_set('list-compress-depth', 0)
