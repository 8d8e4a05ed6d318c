// The views of issue 30 on the page of app.js: replies and the
// conversation view, reposts in the feed, notifications with their
// unread count (docs/web.md).  What they read is social.js's; app.js
// lends them the page's own helpers (initViews), so that this file
// imports nothing of app.js.  Everything goes in as text.

import { httpUrl } from './api.js';
import { nonce } from './mac.js';
import { entityKey, showEntity } from './people.js';
import { entityLink, openProfile } from './profile.js';
import { REPOST, STATUS, STATUS_CHARS, getPost, isType, isUnread,
         loadNotifications, loadThread, repostOf, sameEntity, seenOf,
         threadHash } from './social.js';

const $ = (id) => document.getElementById(id);

// app.js's: state, renderPost, action, notice, showError, showTab, load,
// save, followingId, postText, codePoints, when
let page = null;

export function initViews(lent) {
    page = lent;
}


/* conversations: a reply mentions the post it answers (docs/web.md) */

export function wireReply(li, p) {
    const b = li.querySelector('.reply-button');
    const form = li.querySelector('.reply-form');
    const text = li.querySelector('.reply-text');
    const count = li.querySelector('.reply-count');
    let key = null;                 // one post for retries of one text
    const recount = () => {
        const n = page.codePoints(text.value);
        count.textContent = `${n} / ${STATUS_CHARS}`;
        count.classList.toggle('over', n > STATUS_CHARS);
        key = null;
    };
    const close = () => {
        form.hidden = true;
        b.hidden = false;
        b.focus();
    };
    b.hidden = false;
    b.addEventListener('click', () => {
        form.hidden = false;
        b.hidden = true;
        recount();
        text.focus();
    });
    text.addEventListener('input', recount);
    text.addEventListener('keydown', (ev) => {
        if (ev.key === 'Escape') {
            ev.preventDefault();
            close();
        }
    });
    li.querySelector('.reply-cancel').addEventListener('click', close);
    form.addEventListener('submit', page.action(li.querySelector('.reply-send'),
        async () => {
            key = key || nonce();
            await sendReply(li, p, text.value, key);
            text.value = '';
            recount();
            close();
        }));
}

// a status mentioning the post and its entity; as public as the post,
// else private to its entity
async function sendReply(li, p, text, key) {
    if (!text.trim()) {
        throw new Error('Write something first.');
    }
    if (page.codePoints(text) > STATUS_CHARS) {
        throw new Error(`A status is at most ${STATUS_CHARS} characters; `
                        + `this one has ${page.codePoints(text)}.`);
    }
    const pub = !(p.permissions && p.permissions.public === false);
    const post = { type: STATUS, content: { text },
                   mentions: [{ entity: p.entity, post: p.id }],
                   permissions: { public: pub } };
    if (!pub) {
        post.permissions.entities = sameEntity(p.entity, page.state.entity)
            ? {} : { [p.entity]: true };
    }
    const r = await page.state.api.request('POST', 'posts', { json: post,
        headers: { 'Idempotency-Key': key } });
    const fresh = page.renderPost(r.data);
    if (li.closest('#thread')) {
        fresh.dataset.depth = String(Math.min(3,
            Number(li.dataset.depth || 0) + 1));
        li.after(fresh);
    } else {
        $('feed').prepend(fresh);
        $('feed-empty').hidden = true;
    }
    page.notice('Replied.');
}

// #thread?entity=…&post=…: the conversation of that post; only the last
// one opened is shown (an earlier one may answer later)
let threadShown = 0;

async function openThread(entity, id) {
    const gen = ++threadShown;
    const list = $('thread');
    list.replaceChildren();
    $('thread-missing').hidden = true;
    $('thread-loading').hidden = false;
    try {
        const t = await loadThread({
            api: page.state.api || page.state.anon, entity: page.state.entity,
            signed: !!page.state.api,
            following: (e) => page.followingId(e) }, entity, id);
        if (gen !== threadShown) {
            return;
        }
        for (const { post, depth } of t.items) {
            const li = page.renderPost(post);
            li.dataset.depth = String(Math.min(3, depth));
            if (entityKey(post.entity) + ' ' + post.id === t.opened) {
                li.classList.add('opened');
                li.setAttribute('aria-current', 'true');
            }
            list.append(li);
        }
        if (t.missing) {
            const m = $('thread-missing');
            const who = document.createElement('span');
            showEntity(who, t.missing.entity);
            m.replaceChildren('It answers an earlier post of ', who,
                              ' that this server does not have.');
            m.hidden = false;
        }
        const mine = list.querySelector('.opened .permalink');
        if (mine) {
            mine.focus();
        }
    } finally {
        if (gen === threadShown) {
            $('thread-loading').hidden = true;
        }
    }
}

// the address's hash says the view: a thread, else the tab shown
export function route() {
    const h = location.hash;
    if (h.startsWith('#thread?')) {
        const q = new URLSearchParams(h.slice('#thread?'.length));
        if (q.get('entity') && q.get('post')) {
            page.showTab('thread');
            openThread(q.get('entity'), q.get('post')).catch(page.showError);
            return;
        }
    }
    if (h.startsWith('#entity?')) {
        const e = new URLSearchParams(h.slice('#entity?'.length))
                  .get('entity');
        if (e) {
            page.showTab('entity');
            openProfile(e).catch(page.showError);
            return;
        }
    }
    if (page.state.tab === 'thread' || page.state.tab === 'entity') {
        page.showTab('feed');
    }
}

/* reposts: Tent's repost type, naming and mentioning the original */

function socialCtx() {
    return { api: page.state.api || page.state.anon, entity: page.state.entity,
             signed: !!page.state.api, following: page.followingId };
}

export function wireRepost(li, p) {
    const b = li.querySelector('.repost-button');
    b.hidden = false;
    b.setAttribute('aria-label', 'Repost this post');
    let key = null;                 // a retry is the same repost
    b.addEventListener('click', page.action(b, async () => {
        key = key || nonce();
        const r = await page.state.api.request('POST', 'posts', {
            headers: { 'Idempotency-Key': key },
            json: { type: REPOST, content: { entity: p.entity, id: p.id },
                    mentions: [{ entity: p.entity, post: p.id }],
                    permissions: { public: true } } });
        $('feed').prepend(page.renderPost(p, r.data));
        $('feed-empty').hidden = true;
        page.notice('Reposted.');
        b.hidden = true;
        li.querySelector('.reply-button').focus();
    }));
}

// a repost: shown as the original (from this server, else through the
// following), "reposted by" its reposter; a placeholder meanwhile
export function renderRepost(p) {
    const li = page.renderPost(p);
    const orig = repostOf(p);
    const text = li.querySelector('.text');
    text.textContent = 'Loading the reposted post…';
    if (!orig) {
        text.textContent = 'A repost naming no post.';
        return li;
    }
    getPost(socialCtx(), orig.entity, orig.post).then((o) => {
        if (o && sameEntity(o.entity, orig.entity) && o.id === orig.post
            && !isType(o, REPOST)) {
            li.replaceWith(page.renderPost(o, p));
            return;
        }
        const who = document.createElement('span');
        showEntity(who, orig.entity);
        text.replaceChildren('Reposted a post of ', who,
                             ' that this server cannot show.');
    }).catch((e) => {
        text.textContent = 'The reposted post: ' + e.message;
    });
    return li;
}

/* notifications: mentions, replies, reposts of ours, new followers */

const NOTE_WORDS = { reply: 'replied to your post',
                     repost: 'reposted your post',
                     mention: 'mentioned you', follower: 'followed you' };

export function showUnread(n) {
    $('unread-n').textContent = String(n);
    $('unread').hidden = !n;
}

// the count on the tab: those newer than the newest seen (localStorage)
export async function countUnread() {
    const items = await loadNotifications(socialCtx());
    const seen = page.load('seen');
    showUnread(items.filter((n) => isUnread(n, seen)).length);
    return items;
}

function renderNote(n, seen) {
    const li = document.createElement('li');
    li.className = 'note card';
    li.dataset.kind = n.kind;
    if (isUnread(n, seen)) {
        li.classList.add('unread');
    }
    const head = document.createElement('p');
    head.className = 'what';
    const who = document.createElement(httpUrl(n.who) ? 'a' : 'span');
    if (who.tagName === 'A') {
        entityLink(who, n.who);
    } else {
        showEntity(who, n.who);
    }
    const t = document.createElement('time');
    if (n.time) {
        const d = new Date(n.time * 1000);
        t.dateTime = d.toISOString();
        t.textContent = page.when.format(d);
    }
    head.append(who, ' ' + NOTE_WORDS[n.kind] + ' · ', t);
    li.append(head);
    if (n.kind === 'follower') {
        return li;
    }
    const orig = repostOf(n.post);
    if (n.kind !== 'repost') {
        const text = document.createElement('p');
        text.className = 'text';
        text.textContent = page.postText(n.post);
        li.append(text);
    }
    const open = document.createElement('a');
    open.className = 'open';
    open.href = orig ? threadHash(orig.entity, orig.post)
                     : threadHash(n.post.entity, n.post.id);
    open.textContent = n.kind === 'repost' ? 'Your post'
                                           : 'Open the conversation';
    li.append(open);
    return li;
}

export async function showNotifications() {
    const list = $('notifications');
    $('notifications-loading').hidden = false;
    try {
        const items = await loadNotifications(socialCtx());
        const seen = page.load('seen');
        list.replaceChildren(...items.map((n) => renderNote(n, seen)));
        $('notifications-empty').hidden = items.length > 0;
        if (items.length) {
            page.save('seen', seenOf(items));
        }
        showUnread(0);
    } finally {
        $('notifications-loading').hidden = true;
    }
}
