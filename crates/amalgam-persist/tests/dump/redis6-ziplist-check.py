# Builds Redis 6-style ziplist payloads (RDB version 9: HASH_ZIPLIST, ZSET_ZIPLIST,
# LIST_ZIPLIST, LIST_QUICKLIST) and RESTOREs them on each server whose RESP port
# is given, printing what each holds: run against redis-server 7.0 and amalgam
# to compare (checked for rdb/ziplist.rs on 2026-11-26: the same contents).
# Usage: python3 redis6-ziplist-check.py PORT [PORT...]   (needs redis-py)
import struct, redis, sys
POLY=0x95ac9329ac4bc9b5
T=[]
for i in range(256):
    c=i
    for _ in range(8): c = (c>>1)^POLY if c&1 else c>>1
    T.append(c)
def crc64(b):
    c=0
    for x in b: c = T[(c^x)&0xff] ^ (c>>8)
    return c
assert crc64(b"123456789")==0xe9c6d914c4b8d9ca
def zl(entries):
    body=b''; prev=0; tail=10
    for e in entries:
        start=len(body); tail=10+start
        pre = bytes([prev]) if prev<254 else b'\xfe'+struct.pack('<I',prev)
        if isinstance(e,int):
            if 0<=e<=12: enc=bytes([0xf1+e])
            elif -128<=e<128: enc=b'\xfe'+struct.pack('<b',e)
            elif -32768<=e<32768: enc=b'\xc0'+struct.pack('<h',e)
            elif -(1<<23)<=e<(1<<23): enc=b'\xf0'+struct.pack('<i',e)[:3]
            elif -(1<<31)<=e<(1<<31): enc=b'\xd0'+struct.pack('<i',e)
            else: enc=b'\xe0'+struct.pack('<q',e)
        else:
            if len(e)<64: enc=bytes([len(e)])+e
            elif len(e)<16384: enc=bytes([0x40|(len(e)>>8), len(e)&0xff])+e
            else: enc=b'\x80'+struct.pack('>I',len(e))+e
        body+=pre+enc; prev=len(pre)+len(enc)
    total=10+len(body)+1
    return struct.pack('<IIH',total,tail,len(entries))+body+b'\xff'
def rlen(n):
    if n<64: return bytes([n])
    if n<16384: return bytes([0x40|(n>>8), n&0xff])
    return b'\x80'+struct.pack('>I',n)
def rstr(b): return rlen(len(b))+b
def seal(body, ver=9):
    p=body+struct.pack('<H',ver); return p+struct.pack('<Q',crc64(p))
long=b'q'*300
cases={
 'hash_zl': seal(bytes([13])+rstr(zl([b'f1',b'v1',b'n',-100, b'big', 5000000000, b'm', 70000]))),
 'zset_zl': seal(bytes([12])+rstr(zl([b'a',3,b'b',b'2.5',b'c',b'-inf', b'd', -200]))),
 'list_zl': seal(bytes([10])+rstr(zl([b'x',70000, long]))),
 'list_ql': seal(bytes([14])+rlen(3)+rstr(zl([b'x',70000]))+rstr(zl([]))+rstr(zl([long, 12, -1]))),
}
for port in sys.argv[1:]:
    r=redis.Redis(port=int(port))
    for k,p in cases.items():
        try: r.restore(k,0,p,replace=True)
        except Exception as e: print(port,k,'ERR',e); continue
        t=r.type(k).decode()
        v = {'hash':lambda: sorted(r.hgetall(k).items()), 'zset':lambda: r.zrange(k,0,-1,withscores=True), 'list':lambda: [x[:12] for x in r.lrange(k,0,-1)]}[t]()
        print(port,k,t,v)
