#!/usr/bin/env python3
# Writes the seed corpora of fuzz/corpus/<target>/ (docs/fuzzing.md).
# The seeds are committed; run this again after changing it.
import json
import os
import struct

top = os.path.dirname(os.path.abspath(__file__))


def seeds(target, items):
    d = os.path.join(top, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    for name, data in items:
        if isinstance(data, str):
            data = data.encode()
        with open(os.path.join(d, name), 'wb') as f:
            f.write(data)


# fuzz_mac: Authorization header values (docs/auth.md, the MAC draft)
seeds('fuzz_mac', [
    ('spec', 'MAC id="h480djs93hd8", ts="1336363200", '
             'nonce="dj83hs9s", mac="bhCQXTVyfj5cmA9uKkPFx1zeOXM="'),
    ('ext', 'MAC id="a:94f3b2", ts="1764745200", nonce="9a2f", '
            'mac="3SzX1m8JpcLQwH1uF2YyqN8S6zA8u3mX1kS0q2lq2u4=", ext=""'),
    ('ext-value', 'MAC id="u:1", ts="1", nonce="n", mac="m", '
                  'ext="a,b"'),
    ('tabs', 'mac\tid="x",ts="12",nonce="y",mac="z"'),
    ('other-scheme', 'Basic YWxpY2U6c2VjcmV0'),
    ('twice', 'MAC id="a", id="b", ts="1", nonce="n", mac="m"'),
])


# fuzz_httpsig: byte 0 bit 0 clear, a cavage Signature value; set, an
# RFC 9421 Signature-Input, a newline and the Signature (docs/activitypub.md)
C2 = ('qdx+H7PHHDZgy4y/Ahn9Tny9V3GP6YgBPyUXMmoxWtLbHpUnXS2mg2+SbrQDMCJypxBL'
      'SPQR2aAjn7ndmw2iicw3HMbe8VfEdKFYRqzic+efkb3nndiv/x1xSHDJWeSWkx3Butl'
      'YSuBskLu6kd9Fswtemr3lgdDEmn04swr2Os0=')
seeds('fuzz_httpsig', [
    ('cavage-c2', '\x00keyId="Test",algorithm="rsa-sha256",'
                  'headers="(request-target) host date",signature="'
                  + C2 + '"'),
    ('cavage-default', '\x00keyId="Test",signature="' + C2 + '"'),
    ('cavage-authorization', '\x00Signature keyId="https://a.example/actor'
                             '#main-key",algorithm="hs2019",created=1402170695,'
                             'expires=1402170699.5,headers="(request-target) '
                             '(created) (expires) host date digest '
                             'cache-control",signature="AAAA"'),
    ('cavage-twice', '\x00keyId="a",keyId="b",signature="AAAA"'),
    ('rfc-b21', '\x01sig-b21=();created=1618884473;keyid="test-key-rsa-pss";'
                'nonce="b3k2pp5k7z-50gnwp.yemd"\nsig-b21=:' + C2 + ':'),
    ('rfc-b23', '\x01sig-b23=("date" "@method" "@path" "@query" '
                '"@authority" "content-type" "content-digest" '
                '"content-length");created=1618884473;'
                'keyid="test-key-rsa-pss"\nsig-b23=:AAAA:'),
    ('rfc-derived', '\x01sig1=("@method" "@target-uri" "@authority" "@path" '
                    '"@query" "@request-target" "host" "cache-control");'
                    'created=1;expires=2;keyid="k";alg="rsa-pss-sha512";'
                    'tag="t", sig2=("date");keyid="j"\n'
                    'sig2=:BBBB:, sig1=:AAAA:;x=1'),
    ('rfc-ed25519', '\x01sig-b26=("date" "@method" "@path" "@authority");'
                    'created=1618884473;keyid="test-key-ed25519";'
                    'alg="ed25519"\nsig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nE'
                    'FN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:'),
    ('digest', '\x00SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=, '
               'MD5=Sd/dVLAcvNLSq16eXua5uQ=='),
    ('content-digest', '\x01sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9'
                       'DBPE=:, sha-512=:AAAA:'),
])


# fuzz_store: "u32 length, request" records; a request is
# "u8 op, u8 flags, arguments" (docs/store.md)
def s(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack('>I', len(b)) + b


def rec(b):
    return struct.pack('>I', len(b)) + b


def get(key):
    return bytes([1, 0]) + s(key)


def write(entries, sync=1):
    body = struct.pack('>I', len(entries))
    for e in entries:
        if e[0] == 'put':
            body += bytes([1]) + s(e[1]) + s(e[2])
        else:
            body += bytes([2]) + s(e[1])
    return bytes([2, sync]) + body


def scan(start, end, limit, reverse):
    return bytes([3, 0]) + s(start) + s(end) + struct.pack('>I', limit) \
        + bytes([reverse])


def cas(key, expected, value, entries=()):
    b = bytes([4, 1]) + s(key)
    b += bytes([0]) if expected is None else bytes([1]) + s(expected)
    b += s(value)
    b += write(list(entries))[2:]
    return b


ent = b'https://alice.example\x00'
app = ent + b'a' + b'app1'
cred = ent + b'c' + b'a:key1'
seeds('fuzz_store', [
    ('get', rec(get(ent + b'pcore'))),
    ('put-get-scan', rec(write([('put', app, '{"name":"x"}'),
                                ('put', cred, '{"kind":"app"}')]))
     + rec(get(app)) + rec(scan(ent + b'a', ent + b'b', 10, 0))),
    ('scan-reverse', rec(write([('put', ent + b'gg1', '1'),
                                ('put', ent + b'gg2', '2'),
                                ('del', ent + b'gg3')], 0))
     + rec(scan(ent + b'g', ent + b'h', 0, 1))
     + rec(scan(b'', b'', 1, 1))),
    ('cas', rec(cas(ent + b'moauth-secret', None, 'secret'))
     + rec(cas(ent + b'moauth-secret', 'secret', 'new',
               [('put', ent + b'kcode', '{}'), ('del', ent + b'kold')]))
     + rec(cas(ent + b'moauth-secret', 'stale', 'x'))
     + rec(cas(ent + b'mnone', 'x', 'y'))),
    # one group: a batch writes a later member's key (it waits for the
    # next group), a batch deletes its own key, a member is malformed
    ('cas-group', rec(cas(ent + b'g1', None, 'a', [('put', ent + b'g2', 'b')]))
     + rec(cas(ent + b'g3', None, 'c', [('del', ent + b'g3')]))
     + rec(bytes([4, 1]) + s(ent + b'g4'))
     + rec(cas(ent + b'g2', 'b', 'd'))
     + rec(get(ent + b'g2'))),
    ('bare-get', get('k')),
    ('unknown-op', bytes([9, 0, 0, 0])),
])


# fuzz_ipc: byte 0 (bit 0: the owner's side; bits 1-7: piece size),
# then frames "u32 length, u32 id, payload"
def frame(fid, payload):
    return struct.pack('>II', 4 + len(payload), fid) + payload


seeds('fuzz_ipc', [
    ('server', bytes([1]) + frame(1, get('k')) + frame(2, scan('', '', 0, 0))),
    ('server-pieces', bytes([3]) + b''.join(frame(i, write([('put', 'k',
                                                             'v' * 40)]))
                                            for i in range(1, 8))),
    ('client', bytes([0]) + frame(7, b'\x00value') + frame(8, b'\x01')),
    ('client-partial', bytes([4]) + frame(9, b'\x05') + b'\x00\x00\x01'),
    ('bad-length', bytes([1]) + struct.pack('>II', 2, 1)),
])


# fuzz_url: entity and server URLs (docs/directives.md)
seeds('fuzz_url', [
    ('https', 'https://alice.example'),
    ('slash', 'https://alice.example/'),
    ('path', 'https://example.org/~alice'),
    ('port', 'http://bob.example:8080/tent'),
    ('ipv6', 'https://[2001:db8::1]:8443/'),
    ('userinfo', 'https://user@evil.example/'),
    ('query', 'https://alice.example/?x=1'),
])


# fuzz_keys: entity, a, b, one per line, then 8 bytes for the numbers
seeds('fuzz_keys', [
    ('plain', b'https://alice.example\napp1\nauth1\n' + bytes(8)),
    ('numbers', b'https://alice.example\nhttps://bob.example\npost\n'
                + struct.pack('>Q', 1764745200123456)),
    ('empty-a', b'https://alice.example\n\nx\n' + bytes([255] * 8)),
    ('zero-in-a', b'http://x\na\x00b\nc\n' + struct.pack('>Q', 7)),
])


# fuzz_type: the type, then one allowed type per line
seeds('fuzz_type', [
    ('core', 'https://tent.io/types/info/core/v0.1.0\nall'),
    ('view', 'https://tent.io/types/info/core/v0.1.0#view\n'
             'https://tent.io/types/info/core/v0.2.0'),
    ('post', 'https://tent.io/types/post/status/v0.1.0\n'
             'https://tent.io/types/post/essay/v0.1.0\n'
             'https://tent.io/types/post/status'),
    ('bare', 'https://example.org/types/custom'),
    ('v-only', '/v1/v2'),
])


# fuzz_route: byte 0 the method (GET HEAD POST PUT DELETE OPTIONS),
# byte 1 the API root and the entity, then the URI as sent
seeds('fuzz_route', [
    ('profile', b'\x00\x00/tent/profile'),
    ('profile-type', b'\x00\x00/tent/profile/'
                     b'https%3A%2F%2Ftent.io%2Ftypes%2Finfo%2Fcore'
                     b'%2Fv0.1.0'),
    ('auth-put', b'\x03\x00/tent/apps/app1/authorizations/auth1'),
    ('apps-post', b'\x02\x01/apps?x=1'),
    ('not-allowed', b'\x03\x02/api/v0/groups'),
    ('oauth', b'\x00\x00/tent/oauth/authorize?client_id=app1&scope=x'),
    ('post', b'\x00\x00/tent/posts/https%3A%2F%2Fbob.example/p1'),
    ('posts-count', b'\x01\x01/posts/count?since_id=p1'),
    ('not-found', b'\x00\x00/tent/nope'),
    ('root', b'\x00\x03/~alice'),
])


# fuzz_form: query strings and form bodies of /oauth/authorize
seeds('fuzz_form', [
    ('query', 'client_id=app1&redirect_uri=https%3A%2F%2Fapp.example'
              '%2Fcallback&scope=read_posts,write_posts&state=xyz'
              '&tent_post_types=https%3A%2F%2Ftent.io%2Ftypes%2Fpost'
              '%2Fstatus%2Fv0.1.0&tent_profile_info_types=all'
              '&tent_notification_url=https%3A%2F%2Fapp.example%2Fn'),
    ('form', 'client_id=app1&redirect_uri=https://app.example/cb'
             '&scope=read_posts&state=s+t&csrf=1764745200.abc'
             '&decision=approve'),
    ('html', 'state=%3Cscript%3E%22%27%26&client_id=a'),
    ('control', 'state=%0d%0aX&client_id=a'),
    ('empty', '&&=&client_id&client_id='),
])


# fuzz_apps: byte 0 the caller's scopes (bit 0 write_secrets,
# bit 1 read_apps), then the body
def body(flags, obj):
    return bytes([flags]) + json.dumps(obj).encode()


seeds('fuzz_apps', [
    ('app', body(0, {
        'name': 'FooApp', 'description': 'An example app',
        'url': 'https://app.example/', 'icon': 'https://app.example/i.png',
        'redirect_uris': ['https://app.example/callback'],
        'scopes': {'read_posts': 'Show your posts',
                   'write_posts': 'Post for you'}})),
    ('app-import', body(1, {
        'name': 'Imported', 'redirect_uris': ['https://i.example/cb'],
        'id': 'app-1', 'mac_key_id': 'a:4d3f', 'mac_key': '0123456789abcdef',
        'mac_algorithm': 'hmac-sha-1'})),
    ('auth', body(3, {
        'scopes': ['read_posts', 'write_apps'],
        'post_types': ['https://tent.io/types/post/status/v0.1.0'],
        'profile_info_types': ['all'],
        'notification_url': 'https://app.example/notify'})),
    ('bad-scope', body(0, {'scopes': ['read_everything']})),
    ('array', body(0, [1, 2])),
    ('dup', b'\x00{"name": "a", "name": "b"}'),
])


# fuzz_apmap: byte 0 bit 0 clear: HTML (byte 1 the bound); set: JSON, an
# inbound object and one of our posts (docs/activitypub.md, "Posts both
# ways")
NOTE = {
    'type': 'Note', 'id': 'https://m.example/users/bob/statuses/1',
    'attributedTo': 'https://m.example/users/bob',
    'url': 'https://m.example/@bob/1', 'published': '2026-12-02T13:33:20Z',
    'inReplyTo': 'https://alice.example/tent/posts/p0',
    'to': ['https://www.w3.org/ns/activitystreams#Public'],
    'cc': ['https://m.example/users/bob/followers', 'https://alice.example'],
    'content': '<p><span class="h-card"><a href="https://alice.example" '
               'class="u-url mention">@<span>alice</span></a></span> '
               'hi &amp; <a href="https://e.example/x">link</a></p>',
    'tag': [{'type': 'Mention', 'href': 'https://alice.example',
             'name': '@alice@alice.example'}],
    'attachment': [{'type': 'Document', 'mediaType': 'image/png',
                    'url': 'https://m.example/f/1.png', 'name': 'a cat'}],
}
ARTICLE = {
    'type': 'Article', 'id': 'https://m.example/a/1', 'name': 'Title',
    'summary': '<i>sum</i>', 'content': '<h1>B</h1><p>ody</p>',
    'to': 'https://m.example/users/bob/followers',
    'inReplyTo': {'id': 'https://x.example/n/9',
                  'attributedTo': 'https://x.example/u/c'},
}
STATUS = {
    'id': 'p1', 'entity': 'https://alice.example',
    'type': 'https://tent.io/types/post/status/v0.1.0',
    'permissions': {'public': True}, 'published_at': 1796300000,
    'version': 2, 'updated_at': 1796300100,
    'mentions': [{'entity': 'https://alice.example', 'post': 'p0'},
                 {'entity': 'https://m.example/users/bob', 'post': 'h',
                  'activitypub': {'id': 'https://m.example/n/1'}}],
    'content': {'text': 'Hi <you> https://e.example/x\nbye'},
}
PHOTO = {
    'id': 'p2', 'type': 'https://tent.io/types/post/photo/v0.1.0',
    'permissions': {'public': False,
                    'entities': {'https://m.example/users/bob': True}},
    'content': {'caption': 'cat'},
    'attachments': [{'category': 'photo', 'type': 'image/png',
                     'name': 'c at.png', 'size': 3}],
}
ESSAY = {
    'id': 'p3', 'type': 'https://tent.io/types/post/essay/v0.1.0',
    'permissions': {'public': True},
    'content': {'title': 'T', 'excerpt': '<b>x</b>',
                'body': '<p>B<script>x</script></p>'},
}
seeds('fuzz_apmap', [
    ('html-mastodon', b'\x00\xff' + NOTE['content'].encode()),
    ('html-xss', b'\x00\xff<a href="jav&#x09;ascript:alert(1)">x</a>'
                 b'<img src=x onerror=alert(1)><scr<script>ipt>x</script>'
                 b'<svg/onload=alert(1)><!-- <b> --><![CDATA[<i>]]>'),
    ('html-lists', b'\x00\x04<ul><li>a<li>b</ul><pre>x\ny</pre>'
                   b'<blockquote><code>c</code></blockquote>'),
    ('html-refs', b'\x00\x20&#0;&#x110000;&amp &lt;b&gt; caf\xc3\xa9 '
                  b'\xff\xed\xa0\x80 https://e.example/a?b=1&c=2.'),
    ('note', b'\x01' + json.dumps(NOTE).encode()),
    ('article', b'\x01' + json.dumps(ARTICLE).encode()),
    ('status', b'\x01' + json.dumps(STATUS).encode()),
    ('photo', b'\x01' + json.dumps(PHOTO).encode()),
    ('essay', b'\x01' + json.dumps(ESSAY).encode()),
    ('delete', b'\x01' + json.dumps(
        {'type': 'https://tent.io/types/post/delete/v0.1.0',
         'permissions': {'public': True}, 'content': {'id': 'p1'}}).encode()),
])
