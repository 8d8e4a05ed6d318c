// The profile of any entity (#entity?entity=…, docs/web.md): its name,
// face, bio and website as this server knows them, its URL, its posts
// the reader may see (through our following of it, else those stored
// here), and, signed in, Follow / Unfollow and Block / Unblock.  Reached
// from an entity's name anywhere on the page.  Everything goes in as text.

import { httpUrl } from './api.js';
import { entityKey, known, remember, showEntity } from './people.js';
import { REPOST, isType, sameEntity } from './social.js';

const $ = (id) => document.getElementById(id);
const POSTS = 20;
const BLOCK_PAGES = 21;             // 4,096 blocks at most, 200 a page

// app.js's: state, renderPost, renderRepost, action, notice, showError,
// confirmAction, loadFeed, followingId
let page = null;
let shown = 0;                      // only the last one opened is shown
let current = null;                 // {entity, following, follower, blocked}

export function profileHash(entity) {
    return '#entity?' + new URLSearchParams({ entity: String(entity) });
}

// a link to the entity's profile, showing its name and face
export function entityLink(el, entity) {
    el.href = profileHash(entity);
    el.removeAttribute('rel');
    showEntity(el, entity);
}

// the first record of a list of ours naming the entity, or null
async function record(kind, entity) {
    const r = await page.state.api.request('GET', kind + '?'
        + new URLSearchParams({ entity, limit: '1' }));
    const list = Array.isArray(r.data) ? r.data : [];
    return list.find((x) => x && sameEntity(x.entity, entity)) || null;
}

async function isBlocked(entity) {
    let next = 'blocks?limit=200';
    for (let n = 0; next && n < BLOCK_PAGES; n++) {
        const r = await page.state.api.request('GET', next);
        if ((Array.isArray(r.data) ? r.data : []).some(
            (b) => b && sameEntity(b.entity, entity))) {
            return true;
        }
        next = r.links.next;
    }
    return false;
}

// its posts: through our following (its server's answer), else ours
async function posts(entity, fid) {
    const api = page.state.api || page.state.anon;
    const q = new URLSearchParams({ entity, limit: String(POSTS) });
    let list = null;
    if (fid && !current.blocked) {
        try {
            list = (await api.request('GET', 'followings/'
                + encodeURIComponent(fid) + '/posts?' + q)).data;
        } catch (e) {
            list = null;            // not reachable: what we have
        }
    }
    if (!Array.isArray(list)) {
        list = (await api.request('GET', 'posts?' + q)).data;
    }
    return (Array.isArray(list) ? list : []).filter(
        (p) => p && sameEntity(p.entity, entity)).slice(0, POSTS);
}

function showCard(entity) {
    const who = known(entity);
    showEntity($('ent-who'), entity);
    const url = httpUrl(entity);
    const link = $('ent-link');
    link.textContent = String(entity);
    if (url) {
        link.href = url;
    } else {
        link.removeAttribute('href');
    }
    $('ent-bio').textContent = (who && who.bio) || '';
    $('ent-bio').hidden = !(who && who.bio);
    const site = $('ent-website');
    site.hidden = !(who && who.website);
    if (who && who.website) {
        const a = site.querySelector('a');
        a.href = who.website;
        a.textContent = who.website;
    }
    const c = current;
    const own = sameEntity(entity, page.state.entity);
    const signed = !!page.state.api && !own;
    $('ent-rel').textContent = [
        own ? 'This is you.' : '',
        c.following ? 'You follow it.' : '',
        c.follower ? 'It follows you.' : '',
        c.blocked ? 'Blocked: nothing of it gets in, its posts are not '
                    + 'shown.' : ''].filter(Boolean).join(' ');
    $('ent-follow').hidden = !signed || !!c.following || c.blocked;
    $('ent-unfollow').hidden = !signed || !c.following;
    $('ent-block').hidden = !signed || c.blocked;
    $('ent-unblock').hidden = !signed || !c.blocked;
    const name = (who && who.name) || String(entity);
    for (const [id, verb] of [['ent-follow', 'Follow'],
                              ['ent-unfollow', 'Unfollow'],
                              ['ent-block', 'Block'],
                              ['ent-unblock', 'Unblock']]) {
        $(id).setAttribute('aria-label', verb + ' ' + name);
    }
}

// #entity?entity=…: what we know of it, then its posts
export async function openProfile(entity, focus = true) {
    const gen = ++shown;
    current = { entity, following: null, follower: null, blocked: false };
    $('ent-posts').replaceChildren();
    $('ent-empty').hidden = true;
    $('ent-loading').hidden = false;
    showCard(entity);
    if (focus) {
        $('ent-title').focus();
    }
    try {
        if (page.state.api && !sameEntity(entity, page.state.entity)) {
            const [f, g, b] = await Promise.all([
                record('followings', entity), record('followers', entity),
                isBlocked(entity)]);
            if (gen !== shown) {
                return;
            }
            for (const x of [f, g]) {
                if (x && x.profile) {
                    remember(entity, x.profile);
                }
            }
            Object.assign(current, { following: f, follower: g,
                                     blocked: b });
            showCard(entity);
        }
        const list = await posts(entity, current.following
                                 && current.following.id);
        if (gen !== shown) {
            return;
        }
        $('ent-posts').replaceChildren(...list.map(
            (p) => (isType(p, REPOST) ? page.renderRepost(p)
                                      : page.renderPost(p))));
        $('ent-empty').textContent = current.blocked
            ? 'Its posts are not shown while it is blocked.'
            : 'This server has no post of it that you may see.';
        $('ent-empty').hidden = list.length > 0;
    } finally {
        if (gen === shown) {
            $('ent-loading').hidden = true;
        }
    }
}

// after a change: the card and posts again, the feed without (or with)
// its posts, the focus on the button that undoes it
async function changed(text, focusId) {
    page.notice(text);
    page.loadFeed(false).catch(page.showError);
    await openProfile(current.entity, false);
    const b = $(focusId);
    if (!b.hidden) {
        b.focus();
    }
}

function nameOf(entity) {
    const who = known(entity);
    return (who && who.name) || String(entity);
}

export function initProfile(lent) {
    page = lent;
    const api = () => page.state.api;
    $('ent-follow').addEventListener('click', page.action($('ent-follow'),
        async () => {
            const e = current.entity;
            await api().request('POST', 'followings',
                { json: { entity: entityKey(e) } });
            await changed('Following ' + nameOf(e) + '.', 'ent-unfollow');
        }));
    const unfollow = page.action($('ent-unfollow'), async () => {
        const e = current.entity;
        await api().request('DELETE', 'followings/'
                            + encodeURIComponent(current.following.id));
        await changed('Unfollowed ' + nameOf(e) + '.', 'ent-follow');
    });
    $('ent-unfollow').addEventListener('click', async () => {
        if (current.following && await page.confirmAction('Stop following '
                + nameOf(current.entity) + '?', 'Unfollow')) {
            await unfollow();
        }
    });
    const block = page.action($('ent-block'), async () => {
        const e = current.entity;
        await api().request('POST', 'blocks',
                            { json: { entity: entityKey(e) } });
        await changed('Blocked ' + nameOf(e) + '.', 'ent-unblock');
    });
    $('ent-block').addEventListener('click', async () => {
        if (await page.confirmAction('Block ' + nameOf(current.entity)
                + '? It stops following you, nothing of it gets in and '
                + 'its posts leave your feed.', 'Block')) {
            await block();
        }
    });
    $('ent-unblock').addEventListener('click', page.action($('ent-unblock'),
        async () => {
            const e = current.entity;
            await api().request('DELETE', 'blocks/'
                                + encodeURIComponent(entityKey(e)));
            await changed('Unblocked ' + nameOf(e) + '.', 'ent-block');
        }));
}
