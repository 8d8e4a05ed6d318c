// Conversations, reposts and notifications, from what this server has
// (docs/web.md).  A reply is a status mentioning {entity, post} of the
// post it answers; a repost (Tent's repost type) names the original by
// {entity, id} and mentions it too, so that its author is told.  A post
// this server lacks is asked of its author's server through our
// following (GET /followings/:id/posts/:post_id, signed by the module),
// when the entity is followed.  Every read is bounded in count.

import { entityKey } from './people.js';

export const STATUS = 'https://tent.io/types/post/status/v0.1.0';
export const STATUS_CHARS = 256;    // the module counts code points
export const REPOST = 'https://tent.io/types/post/repost/v0.1.0';
export const FOLLOWER = 'https://tent.io/types/post/follower/v0.1.0';

const THREAD_UP = 20;       // posts above the one opened
const THREAD_POSTS = 100;   // replies read below the top, in all
const THREAD_DEPTH = 8;

export function isType(p, type) {
    return typeof p.type === 'string'
           && p.type.startsWith(type.replace(/v0\.1\.0$/, ''));
}

export function sameEntity(a, b) {
    return typeof a === 'string' && typeof b === 'string'
           && entityKey(a) === entityKey(b);
}

// the post a post answers: its first mention of a post
export function parentOf(p) {
    const ms = p && Array.isArray(p.mentions) ? p.mentions : [];
    const m = ms.find((x) => x && typeof x.entity === 'string'
                             && typeof x.post === 'string');
    return m ? { entity: m.entity, post: m.post } : null;
}

// the original a repost names, or null
export function repostOf(p) {
    const c = p && isType(p, REPOST) ? p.content || {} : {};
    return typeof c.entity === 'string' && typeof c.id === 'string'
        ? { entity: c.entity, post: c.id } : null;
}

function mentionsPost(p, entity, id) {
    return (Array.isArray(p.mentions) ? p.mentions : []).some(
        (m) => m && m.post === id && sameEntity(m.entity, entity));
}

export function threadHash(entity, id) {
    return '#thread?' + new URLSearchParams({ entity, post: id });
}

// ctx: {api (the signed Api or the anonymous one), entity (ours),
// signed, following(entity) -> a promise of the following's id or null}

// a post as this server has it, else through the following; null if
// neither has it (or may show it)
export async function getPost(ctx, entity, id) {
    const own = sameEntity(entity, ctx.entity);
    const path = 'posts/' + (own ? '' : encodeURIComponent(entity) + '/')
                 + encodeURIComponent(id);
    try {
        return (await ctx.api.request('GET', path)).data;
    } catch (e) {
        if (e.status !== 404 || own || !ctx.signed) {
            if (e.status === 404 || e.status === 403) {
                return null;
            }
            throw e;
        }
    }
    const fid = await ctx.following(entity);
    if (!fid) {
        return null;
    }
    try {
        return (await ctx.api.request('GET', 'followings/'
            + encodeURIComponent(fid) + '/posts/'
            + encodeURIComponent(id))).data;
    } catch (e) {
        if (e.status >= 400 && e.status < 600) {
            return null;
        }
        throw e;
    }
}

// the replies to a post this server has (GET /posts?mentioned_post=),
// oldest first
async function repliesTo(ctx, p) {
    const q = new URLSearchParams({ limit: '50', order: 'asc',
                                    mentioned_entity: p.entity,
                                    mentioned_post: p.id });
    const r = await ctx.api.request('GET', 'posts?' + q);
    return (Array.isArray(r.data) ? r.data : []).filter(
        (x) => x && !isType(x, REPOST) && mentionsPost(x, p.entity, p.id));
}

// The whole conversation of a post: up its chain of parents to the top
// (or the first this server cannot get), then every reply below the top
// that it holds, depth first.  [{post, depth}] and missing: the parent
// that could not be read, if any.
export async function loadThread(ctx, entity, id) {
    const opened = await getPost(ctx, entity, id);
    if (!opened) {
        throw new Error('This server does not have that post, or you may '
                        + 'not see it.');
    }
    const key = (p) => entityKey(p.entity) + ' ' + p.id;
    const chain = [opened];
    let missing = null;
    for (let n = 0; n < THREAD_UP; n++) {
        const up = parentOf(chain[0]);
        if (!up || chain.some((c) => key(c) === key(
                { entity: up.entity, id: up.post }))) {
            break;
        }
        const p = await getPost(ctx, up.entity, up.post);
        if (!p) {
            missing = up;
            break;
        }
        chain.unshift(p);
    }
    const out = [];
    const shown = new Set();
    const walk = async (p, depth) => {
        shown.add(key(p));
        out.push({ post: p, depth });
        if (depth >= THREAD_DEPTH) {
            return;
        }
        for (const x of await repliesTo(ctx, p)) {
            if (out.length >= THREAD_POSTS) {
                return;
            }
            if (!shown.has(key(x))) {
                await walk(x, depth + 1);
            }
        }
    };
    // a post of the chain that the replies did not list (read through
    // a following, say) is shown under its parent all the same
    for (const [i, c] of chain.entries()) {
        if (!shown.has(key(c))) {
            const at = out.findIndex((o) => i && key(o.post)
                                            === key(chain[i - 1]));
            await walk(c, at < 0 ? 0 : out[at].depth + 1);
        }
    }
    return { items: out, missing, opened: key(opened) };
}

// Notifications: the posts mentioning us (replies to our posts, reposts
// of them, other mentions), others' only, and the follower posts the
// module writes for each new follower; newest first.  Each is
// {kind: reply|repost|mention|follower, who, post, time, key}; time in
// seconds (received_at, else published_at).
export async function loadNotifications(ctx) {
    const me = ctx.entity;
    const [m, f] = await Promise.all([
        ctx.api.request('GET', 'posts?' + new URLSearchParams({
            limit: '50', mentioned_entity: me })),
        ctx.api.request('GET', 'posts?' + new URLSearchParams({
            limit: '50', post_types: FOLLOWER }))]);
    const out = [];
    const time = (p) => Number(p.received_at) || Number(p.published_at) || 0;
    for (const p of Array.isArray(m.data) ? m.data : []) {
        if (!p || sameEntity(p.entity, me) || typeof p.id !== 'string') {
            continue;
        }
        const orig = repostOf(p);
        let kind = 'mention';
        if (isType(p, REPOST)) {
            if (!orig || !sameEntity(orig.entity, me)) {
                continue;
            }
            kind = 'repost';
        } else if ((Array.isArray(p.mentions) ? p.mentions : []).some(
            (x) => x && typeof x.post === 'string'
                   && sameEntity(x.entity, me))) {
            kind = 'reply';
        }
        out.push({ kind, who: p.entity, post: p, time: time(p),
                   key: entityKey(p.entity) + ' ' + p.id });
    }
    for (const p of Array.isArray(f.data) ? f.data : []) {
        const c = p && p.content ? p.content : {};
        if (!sameEntity(p.entity, me) || typeof c.entity !== 'string'
            || c.action === 'delete') {
            continue;
        }
        out.push({ kind: 'follower', who: c.entity, post: p, time: time(p),
                   key: entityKey(p.entity) + ' ' + p.id });
    }
    return out.sort((a, b) => b.time - a.time);
}

// seen: {at: the newest time seen, keys: those of that second}
export function isUnread(n, seen) {
    if (!seen || typeof seen.at !== 'number') {
        return true;
    }
    return n.time > seen.at || (n.time === seen.at
        && !(Array.isArray(seen.keys) && seen.keys.includes(n.key)));
}

export function seenOf(items) {
    const at = items.reduce((t, n) => Math.max(t, n.time), 0);
    return { at, keys: items.filter((n) => n.time === at)
                            .map((n) => n.key) };
}
