// The module's API from the page: discovery, signed requests, errors.

import { authorization } from './mac.js';

export class ApiError extends Error {
    constructor(message, status) {
        super(message);
        this.status = status;
    }
}

// Link: <…>; rel="next", <…>; rel="prev"
export function parseLinks(header, base) {
    const links = {};
    if (!header) {
        return links;
    }
    for (const part of header.split(/,\s*(?=<)/)) {
        const m = /^\s*<([^>]*)>(.*)$/.exec(part);
        if (!m) {
            continue;
        }
        const rel = /;\s*rel="?([^";]+)"?/.exec(m[2]);
        if (rel) {
            try {
                links[rel[1]] = new URL(m[1], base).href;
            } catch (e) {
                // a link that is no URL is left out
            }
        }
    }
    return links;
}

// An http(s) URL, or null: what may become a link or a follow target.
export function httpUrl(s) {
    try {
        const u = new URL(String(s).trim());
        if ((u.protocol === 'http:' || u.protocol === 'https:') && u.host) {
            return u.href;
        }
    } catch (e) {
        // not a URL
    }
    return null;
}

// The bytes of a photo as a blob of its checked image type, or null.  The
// answer's own Content-Type is the serving server's word (a followed
// entity's, through the followings proxy): a blob of text/html opened by
// "Open image in new tab" would be a document of this origin, where the
// keys are.
export const IMAGE_TYPE = /^image\/(png|jpeg|gif|webp)$/i;

export function imageBlob(blob, type) {
    if (typeof type !== 'string' || !IMAGE_TYPE.test(type)) {
        return null;
    }
    return new Blob([blob], { type: type.toLowerCase() });
}

let skew = 0;   // seconds the server's clock is ahead of ours

export class Api {
    // root: the API root's absolute URL, e.g. http://127.0.0.1:8080/tent
    constructor(root, cred = null) {
        this.root = root.replace(/\/+$/, '');
        this.cred = cred;
    }

    url(path) {
        const u = new URL(/^https?:/i.test(path) ? path
                          : this.root + (path.startsWith('/') ? '' : '/')
                            + path, location.href);
        // a Link the server wrote with the entity's host name while the
        // page was opened by another name of the same server: this origin
        const root = new URL(this.root);
        if (u.origin !== location.origin && root.origin === location.origin
            && u.pathname.startsWith(root.pathname + '/')) {
            return new URL(u.pathname + u.search, location.origin);
        }
        return u;
    }

    // opts: {json, body, headers, cred (null: unsigned), raw}
    async request(method, path, opts = {}) {
        const url = this.url(path);
        const cred = 'cred' in opts ? opts.cred : this.cred;
        let res;
        for (let attempt = 0; ; attempt++) {
            const headers = new Headers(opts.headers || {});
            if (!headers.has('Accept')) {
                headers.set('Accept', 'application/vnd.tent.v0+json');
            }
            let body = opts.body;
            if (opts.json !== undefined) {
                headers.set('Content-Type', 'application/vnd.tent.v0+json');
                body = JSON.stringify(opts.json);
            }
            if (cred) {
                // signatures go to the page's own origin only
                if (url.origin !== location.origin) {
                    throw new ApiError('refusing to sign a request to '
                                       + url.origin, 0);
                }
                const ts = Math.floor(Date.now() / 1000) + skew;
                headers.set('Authorization',
                            await authorization(cred, method, url, ts));
            }
            try {
                res = await fetch(url.href, { method, headers, body,
                                              credentials: 'omit',
                                              cache: 'no-store' });
            } catch (e) {
                throw new ApiError('The server could not be reached ('
                                   + e.message + '): try again.', 0);
            }
            if (res.status === 401 && cred && attempt === 0) {
                const err = await errorText(res.clone());
                if (/timestamp/i.test(err) && res.headers.get('Date')) {
                    // our clock is off: take the server's and sign again
                    skew = Math.round((Date.parse(res.headers.get('Date'))
                                       - Date.now()) / 1000);
                    continue;
                }
                if (/nonce already used/i.test(err)) {
                    continue;
                }
            }
            break;
        }
        if (!res.ok) {
            throw new ApiError(await errorText(res), res.status);
        }
        if (opts.raw) {
            return res;
        }
        const text = await res.text();
        let data = null;
        if (text) {
            try {
                data = JSON.parse(text);
            } catch (e) {
                data = text;
            }
        }
        return { data, status: res.status, headers: res.headers,
                 links: parseLinks(res.headers.get('Link'), url.href) };
    }
}

// The module's {"error": "…"} text, else the status line.
async function errorText(res) {
    let text = '';
    try {
        text = await res.text();
        const j = JSON.parse(text);
        if (j && typeof j.error === 'string') {
            return j.error;
        }
    } catch (e) {
        // not JSON
    }
    return `${res.status} ${res.statusText}`.trim();
}

// The entity of this origin: its profile link (Link header of HEAD /),
// its profile, and from it the API root.
export async function discover() {
    const res = await fetch(location.origin + '/', { method: 'HEAD',
                                                     cache: 'no-store' });
    const links = parseLinks(res.headers.get('Link'), location.origin + '/');
    const profileUrl = links['https://tent.io/rels/profile'];
    if (!profileUrl) {
        throw new ApiError('this server has no Tent profile link', 0);
    }
    const pr = await fetch(location.origin + new URL(profileUrl).pathname, {
        headers: { Accept: 'application/vnd.tent.v0+json' },
        cache: 'no-store' });
    if (!pr.ok) {
        throw new ApiError(await errorText(pr), pr.status);
    }
    const profile = await pr.json();
    const core = profile['https://tent.io/types/info/core/v0.1.0'] || {};
    // the API this page talks to is the one of its own origin (the page
    // may be opened by another name of the server than the entity's)
    const root = location.origin
                 + new URL(profileUrl).pathname.replace(/\/profile$/, '');
    return { entity: core.entity || location.origin, root, profile };
}
