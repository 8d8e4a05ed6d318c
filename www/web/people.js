// Names and faces: an entity is shown by the name and avatar of its
// basic profile when this server has that profile (the entity's own, and
// those kept with each following and follower), else by its URL.  The
// URL stays in the element (shown on hover and focus, and in the title)
// so that a name can never pass for another entity.  Everything goes in
// as text.  An avatar is fetched only from this page's own origin (the
// CSP's connect-src 'self'): one there directly (Accept: */*, which the
// module's attachments take), one elsewhere, signed in, through the
// module's GET {api}/avatars/:entity (which fetches the URL the server
// keeps, never one the page names); else the name's first letter stands
// for it.  It is shown from a blob: of the image type its first bytes
// say (PNG, JPEG, GIF, WebP), never of the answer's Content-Type.

import { httpUrl, imageBlob } from './api.js';

const BASIC = 'https://tent.io/types/info/basic/v0.1.0';
const NAME_CHARS = 80;
const BIO_CHARS = 500;
const AVATAR_BYTES = 1 << 20;

const avatars = new Map();      // URL -> a promise of a blob: URL or null
let faces = null;               // entity -> a promise of a Response, or null

// how an avatar of another origin is asked for (signed in), or null
export function useFaces(fn) {
    faces = fn;
}

// entity (without a bare host's trailing slash) ->
// {name, avatar, bio, website}
const people = new Map();

export function entityKey(entity) {
    return String(entity).replace(/^(https?:\/\/[^/]+)\/$/, '$1');
}

function ownOriginImage(url) {
    const u = httpUrl(url);
    return u && new URL(u).origin === location.origin ? u : null;
}

// what a profile (as GET /profile, or a following's "profile") says
export function remember(entity, profile) {
    const b = profile && typeof profile === 'object' ? profile[BASIC] : null;
    if (typeof entity !== 'string' || !b || typeof b !== 'object') {
        return;
    }
    // bidi overrides and isolates would let a name run into the URL
    // after it (and the CSS isolates the name too)
    const text = (v, n) => (typeof v === 'string'
        ? Array.from(v.replace(/[\u202a-\u202e\u2066-\u2069]/g, '')
                     .trim()).slice(0, n).join('') : '');
    const name = text(b.name, NAME_CHARS);
    const avatar = ownOriginImage(b.avatar_url);
    // kept to know there is one: never fetched by the page
    const remote = avatar ? null : httpUrl(b.avatar_url);
    const bio = text(b.bio, BIO_CHARS);
    const website = httpUrl(b.website_url);
    if (name || avatar || remote || bio || website) {
        people.set(entityKey(entity), { name, avatar, remote, bio, website });
    } else {
        people.delete(entityKey(entity));
    }
}

// the cache as JSON for localStorage, and back (checked as a profile)
export function savedPeople() {
    return Object.fromEntries(Array.from(people, ([e, who]) =>
        [e, { name: who.name,
              avatar_url: who.avatar || who.remote || undefined,
              bio: who.bio || undefined,
              website_url: who.website || undefined }]));
}

export function restorePeople(saved) {
    if (!saved || typeof saved !== 'object') {
        return;
    }
    for (const [entity, basic] of Object.entries(saved)) {
        if (!people.has(entityKey(entity))) {    // what is fresher stays
            remember(entity, { [BASIC]: basic });
        }
    }
}

// all but the one entity (the page's own, which anyone may read)
export function forgetPeople(keep) {
    for (const e of Array.from(people.keys())) {
        if (e !== entityKey(keep)) {
            people.delete(e);
        }
    }
    for (const [k, p] of Array.from(avatars)) {    // the signed-in's own
        if (k.startsWith('face:')) {
            avatars.delete(k);
            p.then((src) => src && URL.revokeObjectURL(src));
        }
    }
}

export function known(entity) {
    return people.get(entityKey(entity)) || null;
}

function sniff(b) {
    const at = (i, ...xs) => xs.every((x, k) => b[i + k] === x);
    const ascii = (i, t) => at(i, ...Array.from(t, (c) => c.charCodeAt(0)));
    if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) {
        return 'image/png';
    }
    if (at(0, 0xff, 0xd8, 0xff)) {
        return 'image/jpeg';
    }
    if (ascii(0, 'GIF87a') || ascii(0, 'GIF89a')) {
        return 'image/gif';
    }
    if (ascii(0, 'RIFF') && ascii(8, 'WEBP')) {
        return 'image/webp';
    }
    return null;
}

function avatarUrl(url, get) {
    if (!avatars.has(url)) {
        avatars.set(url, (async () => {
            const res = get ? await get()
                : await fetch(url, { headers: { Accept: '*/*' },
                                     credentials: 'omit' });
            if (!res) {
                return null;
            }
            const len = Number(res.headers.get('Content-Length'));
            const bytes = res.ok && !(len > AVATAR_BYTES)
                ? await res.arrayBuffer() : null;
            if (!bytes || bytes.byteLength > AVATAR_BYTES) {
                return null;
            }
            const blob = imageBlob(new Blob([bytes]),
                                   sniff(new Uint8Array(bytes, 0,
                                         Math.min(16, bytes.byteLength))));
            return blob ? URL.createObjectURL(blob) : null;
        })().catch(() => null));
    }
    return avatars.get(url);
}

function initial(entity, name) {
    let s = name;
    if (!s) {
        try {
            s = new URL(entity).hostname;
        } catch (e) {
            s = String(entity);
        }
    }
    const first = Array.from(s.trim())[0];
    return first ? first.toUpperCase() : '?';
}

// el (a link or a span) shows the entity: a face, then its name and
// URL, or its URL alone
export function showEntity(el, entity) {
    const who = known(entity);
    el.classList.add('entity');
    el.dataset.entity = String(entity);
    const face = document.createElement('span');
    face.className = 'face';
    face.setAttribute('aria-hidden', 'true');
    face.dataset.initial = initial(entity, who && who.name);
    const shown = !who ? null
        : who.avatar ? avatarUrl(who.avatar)
        : who.remote && faces
            ? avatarUrl('face:' + entityKey(entity), () => faces(entity))
            : null;
    if (shown) {
        shown.then((src) => {
            if (src && face.isConnected) {
                const img = document.createElement('img');
                img.alt = '';
                img.src = src;
                face.dataset.initial = '';
                face.replaceChildren(img);
            }
        });
    }
    el.replaceChildren(face);
    if (who && who.name) {
        const name = document.createElement('span');
        name.className = 'name';
        name.textContent = who.name;
        const url = document.createElement('span');
        url.className = 'url';
        url.textContent = String(entity);
        el.append(name, url);
        el.title = String(entity);
    } else {
        const bare = document.createElement('span');
        bare.className = 'bare';
        bare.textContent = String(entity);
        el.append(bare);
        el.removeAttribute('title');
    }
}

// every entity on the page again, once names are known
export function refreshEntities() {
    for (const el of document.querySelectorAll('.entity[data-entity]')) {
        showEntity(el, el.dataset.entity);
    }
}
