// HTTP MAC (draft -01, as Tent 0.2 and this module use it), by WebCrypto.
// The key never leaves this file's callers: only the signature is sent.

const utf8 = new TextEncoder();

function base64(buf) {
    let s = '';
    for (const b of new Uint8Array(buf)) {
        s += String.fromCharCode(b);
    }
    return btoa(s);
}

// 16 random bytes in hex: 32 characters, the module takes up to 64
export function nonce() {
    const a = new Uint8Array(16);
    crypto.getRandomValues(a);
    return Array.from(a, (b) => b.toString(16).padStart(2, '0')).join('');
}

// The normalized string: ts, nonce, method, request-uri, host, port, ext.
export function macString(ts, n, method, requestUri, host, port, ext = '') {
    return `${ts}\n${n}\n${method.toUpperCase()}\n${requestUri}\n`
           + `${host}\n${port}\n${ext}\n`;
}

// cred: {id, key, algorithm}; url: a URL object of the request as sent.
export async function authorization(cred, method, url, ts, n = nonce()) {
    const hash = /sha-?1$/i.test(cred.algorithm || '') ? 'SHA-1' : 'SHA-256';
    const key = await crypto.subtle.importKey(
        'raw', utf8.encode(cred.key), { name: 'HMAC', hash }, false,
        ['sign']);
    // what the browser sends: the Host header's host and port, else the
    // scheme's default port; the path and query as serialized
    const port = url.port || (url.protocol === 'https:' ? '443' : '80');
    const str = macString(ts, n, method, url.pathname + url.search,
                          url.hostname, port);
    const mac = base64(await crypto.subtle.sign('HMAC', key,
                                                utf8.encode(str)));
    return `MAC id="${cred.id}", ts="${ts}", nonce="${n}", mac="${mac}"`;
}
