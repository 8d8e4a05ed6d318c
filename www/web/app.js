// The entity's web page: anonymous visitors read the public posts; the
// owner signs in through the module's OAuth flow and uses the entity.
// Everything shown from the server goes in with textContent, never as
// HTML, and only http(s) URLs become links.

import { Api, ApiError, discover, httpUrl, imageBlob } from './api.js';
import { nonce } from './mac.js';
import { entityKey, forgetPeople, refreshEntities, remember, restorePeople,
         savedPeople, showEntity, useFaces } from './people.js';
import { REPOST, STATUS, STATUS_CHARS, isType, parentOf, sameEntity,
         threadHash } from './social.js';
import { entityLink, initProfile } from './profile.js';
import { countUnread, initViews, renderRepost, route, showNotifications,
         showUnread, wireReply, wireRepost } from './views.js';

const STORE = 'tent-web:';          // localStorage keys (docs/web.md)
const PHOTO = 'https://tent.io/types/post/photo/v0.1.0';
const ESSAY = 'https://tent.io/types/post/essay/v0.1.0';
const BASIC = 'https://tent.io/types/info/basic/v0.1.0';
const FACE_TYPES = 'image/png, image/jpeg, image/gif, image/webp';
const SCOPES = ['read_posts', 'write_posts', 'read_profile', 'write_profile',
                'read_followers', 'write_followers', 'read_followings',
                'write_followings', 'read_permissions', 'read_groups',
                'read_blocks', 'write_blocks'];

const $ = (id) => document.getElementById(id);
const when = new Intl.DateTimeFormat(undefined,
                                     { dateStyle: 'medium',
                                       timeStyle: 'short' });
const state = { entity: null, root: null, anon: null, api: null,
                next: null, lists: {}, idempotency: null, tab: 'feed' };

function load(name) {
    try {
        return JSON.parse(localStorage.getItem(STORE + name));
    } catch (e) {
        return null;
    }
}

function save(name, value) {
    if (value === null) {
        localStorage.removeItem(STORE + name);
    } else {
        localStorage.setItem(STORE + name, JSON.stringify(value));
    }
}

function pageUrl() {
    return location.origin + location.pathname;
}

// one notice at a time: an error replaces a notice and the other way round
function showError(e) {
    const el = $('error');
    $('notice').textContent = '';
    const msg = e instanceof ApiError || e instanceof Error ? e.message
                                                           : String(e);
    el.textContent = msg;
    el.hidden = false;
    if (!(e instanceof ApiError)) {
        console.error(e);
    }
}

function clearError() {
    $('error').hidden = true;
    $('error').textContent = '';
}

function notice(text) {
    if (text) {
        clearError();
    }
    $('notice').textContent = text;
}

// run an action from a button: its errors in words, the button busy
function action(button, fn) {
    return async (ev) => {
        if (ev) {
            ev.preventDefault();
        }
        clearError();
        notice('');
        // disabling the focused button drops the focus to the page's top
        const focused = button && document.activeElement === button;
        if (button) {
            button.disabled = true;
        }
        try {
            await fn(ev);
        } catch (e) {
            forgetRevoked(e);
            showError(e);
        } finally {
            if (button) {
                button.disabled = false;
                if (focused && button.isConnected && !button.hidden
                    && document.activeElement === document.body) {
                    button.focus();
                }
            }
        }
    };
}

// a u: key the server no longer knows (revoked, expired): sign in again
function forgetRevoked(e) {
    if (e instanceof ApiError && e.status === 401 && state.api
        && /MAC Key ID/i.test(e.message)) {
        save('auth', null);
        save('people', null);
        state.api = null;
        render();
        e.message += ': sign in again.';
    }
}

function codePoints(s) {
    return Array.from(s).length;
}


/* signing in: register, authorize, exchange */

async function signIn() {
    const redirect = pageUrl();
    let app = load('app');
    // an app registered with other scopes (an older page) is made again
    if (!app || app.root !== state.root || app.redirect_uri !== redirect
        || app.scopes !== SCOPES.join(',')) {
        const r = await state.anon.request('POST', 'apps', { cred: null, json: {
            name: 'Tent web',
            description: 'The web page of ' + state.entity,
            url: redirect,
            redirect_uris: [redirect],
            scopes: Object.fromEntries(SCOPES.map(
                (s) => [s, 'the web page acts for the owner'])) } });
        app = { id: r.data.id, key_id: r.data.mac_key_id,
                key: r.data.mac_key, algorithm: r.data.mac_algorithm,
                root: state.root, redirect_uri: redirect,
                scopes: SCOPES.join(',') };
        save('app', app);
    }
    const st = nonce();
    sessionStorage.setItem(STORE + 'state', st);
    const q = new URLSearchParams({
        response_type: 'code', client_id: app.id, redirect_uri: redirect,
        scope: SCOPES.join(','), state: st, tent_post_types: 'all',
        tent_profile_info_types: 'all' });
    location.assign(state.root + '/oauth/authorize?' + q.toString());
}

// back from the authorize page: ?code=…&state=… or ?error=…
async function callback() {
    const p = new URLSearchParams(location.search);
    if (!p.has('code') && !p.has('error')) {
        return;
    }
    history.replaceState(null, '', location.pathname);
    const expected = sessionStorage.getItem(STORE + 'state');
    sessionStorage.removeItem(STORE + 'state');
    if (!expected || p.get('state') !== expected) {
        throw new Error('The sign-in answer does not belong to a sign-in '
                        + 'started here: sign in again.');
    }
    if (p.has('error')) {
        throw new Error(p.get('error') === 'access_denied'
                        ? 'Sign-in was denied on the authorize page.'
                        : 'Sign-in failed: ' + p.get('error'));
    }
    const app = load('app');
    if (!app) {
        throw new Error('This browser lost the app it registered: '
                        + 'sign in again.');
    }
    let r;
    try {
        r = await state.anon.request('POST',
            'apps/' + encodeURIComponent(app.id) + '/authorizations',
            { json: { code: p.get('code') },
              cred: { id: app.key_id, key: app.key,
                      algorithm: app.algorithm } });
    } catch (e) {
        if (e.status === 401) {
            save('app', null);      // the server forgot it: register again
        }
        throw e;
    }
    save('auth', { id: r.data.access_token, key: r.data.mac_key,
                   algorithm: r.data.mac_algorithm, root: state.root,
                   entity: state.entity });
    // the header says "Signed in"; no notice repeats it
}

// Sign out deletes this browser's app (DELETE /apps/:id with its a:
// key), which revokes its authorizations: the u: key stops working on
// the server, not only here.  Each browser registered its own app.
async function signOut() {
    const app = load('app');
    save('auth', null);
    save('people', null);
    save('seen', null);
    showUnread(0);
    forgetPeople(state.entity);
    state.api = null;
    render();
    if (app && app.root === state.root) {
        try {
            await state.anon.request('DELETE',
                'apps/' + encodeURIComponent(app.id),
                { cred: { id: app.key_id, key: app.key,
                          algorithm: app.algorithm } });
            save('app', null);
            notice('Signed out; this browser\'s app is deleted.');
        } catch (e) {
            if (e.status === 401 || e.status === 404) {
                save('app', null);          // already gone
            } else {
                showError('Signed out here, but the server did not delete '
                          + 'the app: ' + e.message);
            }
        }
    }
    await loadFeed(false);
    route();                        // a profile shown: without its buttons
}


/* posts */

// an ActivityPub post's attachments: links to their own origin, which
// the page never fetches (the reader may follow one); http(s) only
function remoteLinks(box, p) {
    const list = p.activitypub && Array.isArray(p.activitypub.attachments)
        ? p.activitypub.attachments : [];
    for (const att of list.slice(0, 8)) {
        const url = att && httpUrl(att.url);
        if (!url) {
            continue;
        }
        const a = document.createElement('a');
        a.href = url;
        a.rel = 'noopener noreferrer nofollow';
        const name = typeof att.name === 'string' && att.name.trim()
            ? att.name.trim().slice(0, 200) : url;
        const type = typeof att.mediaType === 'string'
            ? att.mediaType.slice(0, 60) : '';
        a.textContent = `Attachment: ${name}` + (type ? ` (${type})` : '');
        const item = document.createElement('li');
        item.append(a);
        box.append(item);
        box.hidden = false;
    }
}

function postText(p) {
    const c = p.content || {};
    const t = typeof p.type === 'string' ? p.type : '';
    if (t.startsWith(STATUS.replace(/v0\.1\.0$/, ''))) {
        return typeof c.text === 'string' ? c.text : '';
    }
    if (t.startsWith(PHOTO.replace(/v0\.1\.0$/, ''))) {
        return typeof c.caption === 'string' ? c.caption : '';
    }
    if (t.startsWith(ESSAY.replace(/v0\.1\.0$/, ''))) {
        return [c.title, c.body].filter((s) => typeof s === 'string')
                                .join('\n\n');
    }
    const kind = t.replace(/^https:\/\/tent\.io\/types\/post\/([a-z]+)\/.*$/,
                           '$1');
    if (kind === 'following' || kind === 'follower') {
        const verb = c.action === 'delete' ? 'Stopped' : 'Started';
        return kind === 'following'
               ? `${verb} following ${String(c.entity || '')}`
               : `${String(c.entity || '')}: ${verb.toLowerCase()} `
                 + 'following';
    }
    if (kind === 'profile') {
        return 'Updated the profile';
    }
    if (kind === 'delete') {
        return 'Deleted a post';
    }
    return '(' + t.replace(/^https:\/\/tent\.io\/types\/post\//, '') + ')';
}

// via: the repost that brought the post, shown with who reposted it
function renderPost(p, via = null) {
    const li = $('post-template').content.firstElementChild.cloneNode(true);
    const own = p.entity === state.entity;
    li.dataset.id = String(p.id);
    if (via) {
        li.dataset.repost = String(via.id);
        const by = li.querySelector('.reposted');
        entityLink(by.querySelector('.reposter'), via.entity);
        by.hidden = false;
    }
    const link = httpUrl(p.entity);
    const a = li.querySelector('.author');
    if (link) {
        entityLink(a, p.entity);
    } else {
        a.remove();
        li.querySelector('.author-text').textContent = String(p.entity);
    }
    const t = Number(p.published_at);
    if (Number.isFinite(t)) {
        const d = new Date(t * 1000);
        const time = li.querySelector('.when');
        time.dateTime = d.toISOString();
        time.textContent = when.format(d);
    }
    if (p.permissions && p.permissions.public === false) {
        li.querySelector('.private').hidden = false;
    }
    li.querySelector('.permalink').href = threadHash(p.entity, p.id);
    const parent = isType(p, REPOST) ? null : parentOf(p);
    if (parent) {
        const box = li.querySelector('.in-reply');
        const to = box.querySelector('a');
        to.href = threadHash(parent.entity, parent.post);
        showEntity(to, parent.entity);
        box.hidden = false;
    }
    li.querySelector('.text').textContent = postText(p);
    if (state.api && editField(p)) {
        wireReply(li, p);
        if (!own && !(p.permissions && p.permissions.public === false)) {
            wireRepost(li, p);
        }
    }
    for (const att of Array.isArray(p.attachments) ? p.attachments : []) {
        if (att && typeof att.type === 'string'
            && /^image\/(png|jpeg|gif|webp)$/i.test(att.type)
            && typeof att.name === 'string') {
            showPhoto(li.querySelector('.photos'), p, att, own);
        }
    }
    remoteLinks(li.querySelector('.links'), p);
    if (!own && state.api
        && String(p.type).startsWith(PHOTO.replace(/v0\.1\.0$/, ''))
        && !(Array.isArray(p.attachments) && p.attachments.length)) {
        // a received copy lists no attachments: ask the author's server
        // through our following (GET /followings/:id/…, signed for us)
        const b = li.querySelector('.photo-button');
        b.hidden = false;
        b.addEventListener('click', action(b, async () => {
            const box = li.querySelector('.photos');
            await remotePhotos(box, p);
            b.hidden = true;
            box.tabIndex = -1;          // the focus, in the button's place
            box.focus();
        }));
    }
    if (via && state.api && sameEntity(via.entity, state.entity)) {
        wireChanges(li, via);       // Delete takes the repost back
        li.querySelector('.delete-button').textContent = 'Delete repost';
    }
    if (own && state.api && !via) {
        const b = li.querySelector('.deliveries-button');
        b.hidden = false;
        b.addEventListener('click', action(b, () => deliveries(li, p)));
        wireChanges(li, p);
    }
    if (Number(p.version) > 1) {
        li.querySelector('.edited').hidden = false;
    }
    return li;
}


/* editing and deleting the owner's own posts (the API refuses others') */

// the content field an edit replaces: statuses and photos' captions
function editField(p) {
    const t = typeof p.type === 'string' ? p.type : '';
    if (t.startsWith(STATUS.replace(/v0\.1\.0$/, ''))) {
        return 'text';
    }
    if (t.startsWith(PHOTO.replace(/v0\.1\.0$/, ''))) {
        return 'caption';
    }
    return null;
}

// asks in a modal dialog (Escape or Cancel: no); resolves true for OK.
// Answered by its buttons and its cancel event (Escape), which come in
// order: its close event is queued and could reach the next question.
const asking = { resolve: null, back: null };

function confirmAction(text, ok) {
    const d = $('confirm');
    $('confirm-text').textContent = text;
    $('confirm-ok').textContent = ok;
    asking.back = document.activeElement;
    d.showModal();
    return new Promise((resolve) => {
        asking.resolve = resolve;
    });
}

function answer(yes) {
    const d = $('confirm');
    const { resolve, back } = asking;
    asking.resolve = null;
    if (d.open) {
        d.close();
    }
    if (back && back.isConnected) {
        back.focus();
    }
    if (resolve) {
        resolve(yes);
    }
}

function wireChanges(li, p) {
    const del = li.querySelector('.delete-button');
    del.hidden = false;
    del.addEventListener('click', async () => {
        if (await confirmAction('Delete this post? It is deleted for '
                                + 'everyone it was sent to too.', 'Delete')) {
            await action(del, () => deletePost(li, p))();
        }
    });
    const field = editField(p);
    if (!field) {
        return;
    }
    const edit = li.querySelector('.edit-button');
    const form = li.querySelector('.edit-form');
    const text = li.querySelector('.edit-text');
    const count = li.querySelector('.edit-count');
    const recount = () => {
        const n = codePoints(text.value);
        const limited = field === 'text';
        count.textContent = limited ? `${n} / ${STATUS_CHARS}` : '';
        count.classList.toggle('over', limited && n > STATUS_CHARS);
    };
    const close = () => {
        form.hidden = true;
        li.querySelector('.text').hidden = false;
        edit.hidden = false;
        edit.focus();
    };
    edit.hidden = false;
    edit.addEventListener('click', () => {
        text.value = postText(p);
        recount();
        form.hidden = false;
        li.querySelector('.text').hidden = true;
        edit.hidden = true;
        text.focus();
    });
    text.addEventListener('input', recount);
    text.addEventListener('keydown', (ev) => {
        if (ev.key === 'Escape') {
            ev.preventDefault();
            close();
        }
    });
    li.querySelector('.edit-cancel').addEventListener('click', close);
    form.addEventListener('submit', action(li.querySelector('.edit-save'),
        () => saveEdit(li, p, field, text.value)));
}

// PUT /posts/:id with the new content: a new version, the rest kept
async function saveEdit(li, p, field, value) {
    if (field === 'text' && !value.trim()) {
        throw new Error('Write something first.');
    }
    if (field === 'text' && codePoints(value) > STATUS_CHARS) {
        throw new Error(`A status is at most ${STATUS_CHARS} characters; `
                        + `this one has ${codePoints(value)}.`);
    }
    const content = Object.assign({}, p.content || {}, { [field]: value });
    const r = await state.api.request('PUT',
        'posts/' + encodeURIComponent(p.id), { json: { content } });
    const fresh = renderPost(r.data);
    li.replaceWith(fresh);
    fresh.querySelector('.edit-button').focus();
    notice('Post edited.');
}

async function deletePost(li, p) {
    await state.api.request('DELETE', 'posts/' + encodeURIComponent(p.id));
    const next = li.nextElementSibling;
    li.remove();
    $('feed-empty').hidden = $('feed').children.length > 0;
    const focus = next && next.querySelector('.actions button:not([hidden])');
    (focus || $('refresh')).focus();
    notice('Post deleted.');
}

// the bytes fetched with the signature (private posts need it), shown
// from a blob: URL
async function showPhoto(box, p, att, own) {
    const api = state.api || state.anon;
    const path = 'posts/' + (own ? '' : encodeURIComponent(p.entity) + '/')
                 + encodeURIComponent(p.id) + '/attachments/'
                 + encodeURIComponent(att.name);
    try {
        const res = await api.request('GET', path,
                                      { raw: true,
                                        headers: { Accept: att.type } });
        const img = document.createElement('img');
        img.alt = att.name;
        img.src = URL.createObjectURL(imageBlob(await res.blob(),
                                                att.type));
        box.append(img);
    } catch (e) {
        const s = document.createElement('span');
        s.className = 'muted';
        s.textContent = att.name + ': ' + e.message;
        box.append(s);
    }
}

// the id of our following of an entity, or null; asked once a feed
// (a page of reposts of one entity asks once), again after a change
const followingIds = new Map();     // entity -> a promise of that

function followingId(entity) {
    const k = entityKey(entity);
    if (!followingIds.has(k)) {
        const found = findFollowing(entity);
        found.catch(() => followingIds.delete(k));
        followingIds.set(k, found);
    }
    return followingIds.get(k);
}

async function findFollowing(entity) {
    for (let next = 'followings?limit=200'; next; ) {
        const r = await state.api.request('GET', next);
        const f = (Array.isArray(r.data) ? r.data : [])
                  .find((x) => x && sameEntity(x.entity, entity));
        if (f) {
            return f.id;
        }
        next = r.links.next;
    }
    return null;
}

async function remotePhotos(box, p) {
    const id = await followingId(p.entity);
    if (!id) {
        throw new Error('The photo is at ' + p.entity
                        + ', which is no longer followed.');
    }
    const base = 'followings/' + encodeURIComponent(id) + '/posts/'
                 + encodeURIComponent(p.id);
    const r = await state.api.request('GET', base);
    for (const att of Array.isArray(r.data && r.data.attachments)
                      ? r.data.attachments : []) {
        if (att && typeof att.type === 'string'
            && /^image\/(png|jpeg|gif|webp)$/i.test(att.type)
            && typeof att.name === 'string') {
            const res = await state.api.request('GET',
                base + '/attachments/' + encodeURIComponent(att.name),
                { raw: true, headers: { Accept: att.type } });
            const img = document.createElement('img');
            img.alt = att.name;
            img.src = URL.createObjectURL(imageBlob(await res.blob(),
                                                att.type));
            box.append(img);
        }
    }
}

async function deliveries(li, p) {
    const box = li.querySelector('.deliveries');
    const r = await state.api.request('GET',
        'posts/' + encodeURIComponent(p.id) + '/deliveries');
    const d = r.data || {};
    const c = d.counts || {};
    box.replaceChildren();
    const sum = document.createElement('p');
    sum.textContent = ['delivered', 'pending', 'retrying', 'failed']
        .map((k) => `${k} ${Number(c[k]) || 0}`).join(' · ')
        + (d.counts_complete === false ? ' (counts incomplete)' : '');
    box.append(sum);
    const ul = document.createElement('ul');
    for (const x of Array.isArray(d.deliveries) ? d.deliveries : []) {
        const item = document.createElement('li');
        const who = document.createElement('span');
        showEntity(who, String(x.entity));
        const bits = [String(x.state)];
        if (x.last_status) {
            bits.push('HTTP ' + x.last_status);
        }
        if (x.last_error) {
            bits.push(String(x.last_error));
        }
        if (x.last_attempt_at) {
            bits.push(when.format(new Date(x.last_attempt_at * 1000)));
        }
        item.append(who, ' — ' + bits.join(' — '));
        ul.append(item);
    }
    if (!ul.children.length) {
        const item = document.createElement('li');
        item.textContent = 'No deliveries to other entities.';
        ul.append(item);
    }
    box.append(ul);
    box.hidden = false;
}

async function loadFeed(more) {
    const api = state.api || state.anon;
    if (!more) {
        followingIds.clear();
    }
    const r = await api.request('GET', more && state.next ? state.next
                                                          : 'posts?limit=20');
    const feed = $('feed');
    if (!more) {
        feed.replaceChildren();
    }
    for (const p of Array.isArray(r.data) ? r.data : []) {
        feed.append(isType(p, REPOST) ? renderRepost(p) : renderPost(p));
    }
    state.next = r.links.next || null;
    $('feed-loading').hidden = true;
    $('older').hidden = !state.next;
    $('feed-empty').hidden = feed.children.length > 0;
}

function updateCount() {
    const n = codePoints($('status-text').value);
    const el = $('status-count');
    el.textContent = `${n} / ${STATUS_CHARS}`;
    el.classList.toggle('over', n > STATUS_CHARS);
    save('draft', $('status-text').value || null);
    state.idempotency = null;       // new text, a new post
}

function recipients() {
    const urls = [];
    for (const s of $('status-entities').value.split(/[\s,]+/)) {
        if (!s) {
            continue;
        }
        const u = httpUrl(s);
        if (!u) {
            throw new Error(`"${s}" is not an http or https URL`);
        }
        // an entity is its URL without the trailing slash of a bare host
        urls.push(u.replace(/^(https?:\/\/[^/]+)\/$/, '$1'));
    }
    return urls;
}

async function postStatus() {
    const text = $('status-text').value;
    const file = $('status-photo').files[0] || null;
    const isPrivate = document.querySelector(
        'input[name=visibility]:checked').value === 'private';
    if (!file && !text.trim()) {
        throw new Error('Write something first.');
    }
    if (!file && codePoints(text) > STATUS_CHARS) {
        throw new Error(`A status is at most ${STATUS_CHARS} characters; `
                        + `this one has ${codePoints(text)}.`);
    }
    const post = { type: file ? PHOTO : STATUS,
                   content: file ? { caption: text } : { text },
                   permissions: { public: !isPrivate } };
    if (isPrivate) {
        const to = recipients();
        const groups = Array.from(document.querySelectorAll(
            '#status-groups input:checked'), (c) => ({ id: c.value }));
        if (!to.length && !groups.length) {
            throw new Error('Name at least one entity or group for a '
                            + 'private post.');
        }
        post.permissions.entities = Object.fromEntries(
            to.map((e) => [e, true]));
        if (groups.length) {
            post.permissions.groups = groups;
        }
        if (to.length) {
            post.mentions = to.map((e) => ({ entity: e }));
        }
    }
    // a retry of the same text is the same post, never a second one
    if (!state.idempotency) {
        state.idempotency = nonce();
    }
    const headers = { 'Idempotency-Key': state.idempotency };
    let r;
    if (file) {
        const form = new FormData();
        form.append('post', new Blob([JSON.stringify(post)],
                    { type: 'application/vnd.tent.v0+json' }), 'post.json');
        form.append('photos[0]', file, file.name || 'photo');
        r = await state.api.request('POST', 'posts', { body: form, headers });
    } else {
        r = await state.api.request('POST', 'posts', { json: post, headers });
    }
    // only now is the text let go
    $('status-text').value = '';
    $('status-photo').value = '';
    updateCount();
    $('feed').prepend(renderPost(r.data));
    $('feed-empty').hidden = true;
    notice('Posted.');
}


// the owner's groups, to choose for a private post
async function loadGroups() {
    const box = $('status-groups');
    const r = await state.api.request('GET', 'groups?limit=200');
    for (const old of box.querySelectorAll('label')) {
        old.remove();
    }
    for (const g of Array.isArray(r.data) ? r.data : []) {
        if (!g || typeof g.id !== 'string') {
            continue;
        }
        const label = document.createElement('label');
        label.className = 'inline';
        const c = document.createElement('input');
        c.type = 'checkbox';
        c.value = g.id;
        c.disabled = $('status-entities').disabled;
        label.append(c, ' ', typeof g.name === 'string' ? g.name : g.id);
        box.append(label);
    }
    box.hidden = !box.querySelector('label');
}


/* followings, followers, profile */

function person(entity, button) {
    const li = document.createElement('li');
    const link = httpUrl(entity);
    if (link) {
        const a = document.createElement('a');
        entityLink(a, entity);
        li.append(a);
    } else {
        li.append(document.createTextNode(String(entity)));
    }
    if (button) {
        li.append(' ', button);
    }
    return li;
}

async function loadPeople(kind, more) {
    const list = $(kind);
    if (kind === 'followings') {
        followingIds.clear();
    }
    const r = await state.api.request('GET', more && state.lists[kind]
                                      ? state.lists[kind] : kind + '?limit=50');
    if (!more) {
        list.replaceChildren();
    }
    for (const f of Array.isArray(r.data) ? r.data : []) {
        remember(f.entity, f.profile);
        let b = null;
        if (kind === 'followings') {
            b = document.createElement('button');
            b.type = 'button';
            b.textContent = 'Unfollow';
            b.setAttribute('aria-label', 'Unfollow ' + f.entity);
            const unfollow = action(b, async () => {
                await state.api.request('DELETE', 'followings/'
                                        + encodeURIComponent(f.id));
                notice('Unfollowed ' + f.entity + '.');
                await loadPeople('followings', false);
            });
            b.addEventListener('click', async () => {
                if (await confirmAction('Stop following ' + f.entity
                                        + '?', 'Unfollow')) {
                    await unfollow();
                }
            });
        }
        list.append(person(f.entity, b));
    }
    if (!list.children.length) {
        list.append(person('None yet.', null));
        list.firstElementChild.className = 'muted';
    }
    state.lists[kind] = r.links.next || null;
    $(kind + '-more').hidden = !state.lists[kind];
    refreshEntities();              // names it brought, in the feed too
}

async function follow() {
    const url = httpUrl($('follow-url').value);
    if (!url) {
        throw new Error('An entity is an http or https URL.');
    }
    const r = await state.api.request('POST', 'followings',
        { json: { entity: url.replace(/^(https?:\/\/[^/]+)\/$/, '$1') } });
    $('follow-url').value = '';
    notice('Following ' + ((r.data && r.data.entity) || url) + '.');
    await loadPeople('followings', false);
}

async function loadProfile() {
    // what is typed before the profile arrives would be overwritten
    const form = $('profile-form');
    form.dataset.loaded = 'false';
    $('profile-fields').disabled = true;
    const r = await state.api.request('GET', 'profile');
    const b = (r.data && r.data[BASIC]) || {};
    remember(state.entity, r.data);
    refreshEntities();
    const str = (v) => (typeof v === 'string' ? v : '');
    $('p-name').value = str(b.name);
    $('p-bio').value = str(b.bio);
    $('p-location').value = str(b.location);
    $('p-website').value = str(b.website_url);
    $('p-avatar').value = str(b.avatar_url);
    $('p-public').checked = !b.permissions || b.permissions.public !== false;
    $('profile-fields').disabled = false;
    form.dataset.loaded = 'true';
    showName(b);
}

async function saveProfile() {
    const body = { name: $('p-name').value, bio: $('p-bio').value,
                   location: $('p-location').value,
                   permissions: { public: $('p-public').checked } };
    for (const [f, id] of [['website_url', 'p-website'],
                           ['avatar_url', 'p-avatar']]) {
        const v = $(id).value.trim();
        if (v && !httpUrl(v)) {
            throw new Error(f + ' must be an http or https URL');
        }
        if (v) {
            body[f] = v;
        }
    }
    await state.api.request('PUT', 'profile/' + encodeURIComponent(BASIC),
                            { json: body });
    notice('Profile saved.');
    await loadProfile();
}

// the names and faces of the entities this server keeps a profile of:
// those followed and the followers (one page of each)
async function loadNames() {
    const api = state.api;
    for (const kind of ['followings', 'followers']) {
        const r = await api.request('GET', kind + '?limit=200');
        if (state.api !== api) {
            return;     // signed out meanwhile: nothing of it is kept
        }
        for (const f of Array.isArray(r.data) ? r.data : []) {
            if (f && typeof f === 'object') {
                remember(f.entity, f.profile);
            }
        }
    }
    save('people', savedPeople());
    refreshEntities();
}

function showName(basic) {
    const name = basic && typeof basic.name === 'string' && basic.name;
    $('entity-name').textContent = name || 'Tent';
    document.title = (name || state.entity) + ' — Tent';
}


/* the page */

function showTab(name) {
    state.tab = name;
    if (/^#(thread|entity)\?/.test(location.hash)
        && !location.hash.startsWith('#' + name + '?')) {
        history.replaceState(null, '', location.pathname + location.search);
    }
    for (const b of document.querySelectorAll('#tabs button')) {
        b.setAttribute('aria-pressed', String(b.dataset.tab === name));
    }
    for (const s of document.querySelectorAll('.tab')) {
        s.hidden = s.id !== 'tab-' + name;
    }
    const loaders = { following: () => loadPeople('followings', false),
                      followers: () => loadPeople('followers', false),
                      profile: loadProfile,
                      notifications: showNotifications };
    if (loaders[name]) {
        loaders[name]().catch(showError);
    }
}

// Until then the header says "Loading…": a signed-in owner is not
// offered "Sign in" while the page finds out who is there.
function render() {
    const signed = !!state.api;
    $('loading').hidden = true;
    $('sign-in').hidden = signed;
    $('sign-out').hidden = !signed;
    $('signed-as').hidden = !signed;
    $('tabs').hidden = !signed;
    $('compose').hidden = !signed;
    $('feed-title').textContent = signed ? 'Feed' : 'Public posts';
    // a view the address names (#thread?…, #entity?…) stays: route()
    if (!signed && !/^#(thread|entity)\?/.test(location.hash)) {
        showTab('feed');
    }
    document.body.dataset.state = signed ? 'signed-in' : 'anonymous';
}

// The entity moved (docs/move.md): its profile names the new entity and
// lists this one (this page's origin) among the previous ones.  The
// feed's reads are sent there (301 across origins: "Failed to fetch"),
// so the page says where it went instead.
function movedTo(d) {
    const core = d.profile['https://tent.io/types/info/core/v0.1.0'] || {};
    const prev = Array.isArray(core.previous_entities)
        ? core.previous_entities : [];
    let to;
    try {
        to = new URL(core.entity);
    } catch (e) {
        return null;
    }
    const here = (u) => {
        try {
            return new URL(u).origin === location.origin;
        } catch (e) {
            return false;
        }
    };
    if ((to.protocol !== 'https:' && to.protocol !== 'http:')
        || to.origin === location.origin || !prev.some(here)) {
        return null;
    }
    return to.href;
}

function showMoved(url) {
    const el = $('error');
    const a = document.createElement('a');
    a.href = url;
    a.textContent = url;
    el.replaceChildren('This entity moved to ', a, '.');
    el.hidden = false;
    el.dataset.moved = url;
    document.body.dataset.state = 'moved';
}

async function main() {
    initViews({ state, renderPost, action, notice, showError, showTab, load,
                save, followingId, postText, codePoints, when });
    initProfile({ state, renderPost, renderRepost, action, notice, showError,
                  confirmAction, loadFeed });
    const d = await discover();
    const moved = movedTo(d);
    if (moved) {
        $('loading').hidden = true;
        $('feed-loading').hidden = true;
        $('entity-url').textContent = location.origin;
        showMoved(moved);
        document.body.dataset.ready = 'true';
        return;
    }
    state.entity = d.entity;
    state.root = d.root;
    state.anon = new Api(d.root);
    // faces of other origins through the module, signed in
    useFaces((entity) => (state.api
        ? state.api.request('GET',
                            'avatars/' + encodeURIComponent(entity),
                            { raw: true, headers: { Accept: FACE_TYPES } })
        : null));
    remember(d.entity, d.profile);
    $('entity-url').textContent = d.entity;
    showName(d.profile[BASIC]);

    try {
        await callback();
    } catch (e) {
        showError(e);
    }

    const auth = load('auth');
    if (auth && auth.root === state.root && auth.entity === state.entity) {
        state.api = new Api(state.root, auth);
        restorePeople(load('people'));  // names at once, read again below
    }
    render();

    const draft = load('draft');
    if (typeof draft === 'string') {
        $('status-text').value = draft;
    }
    updateCount();

    $('sign-in').addEventListener('click', action($('sign-in'), signIn));
    $('sign-out').addEventListener('click', action($('sign-out'), signOut));
    $('status-text').addEventListener('input', updateCount);
    for (const r of document.querySelectorAll('input[name=visibility]')) {
        r.addEventListener('change', () => {
            const off = document.querySelector(
                'input[name=visibility]:checked').value !== 'private';
            $('status-entities').disabled = off;
            for (const c of document.querySelectorAll(
                     '#status-groups input')) {
                c.disabled = off;
            }
        });
    }
    $('compose').addEventListener('submit',
                                  action($('post-button'), postStatus));
    $('refresh').addEventListener('click', action($('refresh'), async () => {
        await loadFeed(false);
        if (state.api) {
            countUnread().catch(showError);
        }
    }));
    $('older').addEventListener('click',
                                action($('older'), () => loadFeed(true)));
    $('follow-form').addEventListener('submit',
                                      action($('follow-button'), follow));
    $('profile-form').addEventListener('submit',
                                       action($('profile-save'), saveProfile));
    for (const kind of ['followings', 'followers']) {
        const b = $(kind + '-more');
        b.addEventListener('click', action(b, () => loadPeople(kind, true)));
    }
    for (const b of document.querySelectorAll('#tabs button')) {
        b.addEventListener('click', () => showTab(b.dataset.tab));
    }
    $('confirm-ok').addEventListener('click', () => answer(true));
    $('confirm-cancel').addEventListener('click', () => answer(false));
    $('confirm').addEventListener('cancel', () => answer(false));

    // WebCrypto is there in a secure context only (https, loopback)
    if (!window.isSecureContext || !crypto.subtle) {
        $('sign-in').disabled = true;
        showError('This page cannot sign requests here: open it over '
                  + 'https (WebCrypto needs a secure context).');
    }

    try {
        await loadFeed(false);
    } catch (e) {
        if (e.status === 401 && state.api) {
            forgetRevoked(e);
            showError(e);
            await loadFeed(false);
        } else {
            throw e;
        }
    }
    window.addEventListener('hashchange', route);
    route();
    if (state.api) {
        countUnread().catch(showError);
        loadGroups().catch(showError);
        loadNames().catch(showError);
    }
    document.body.dataset.ready = 'true';
}

main().catch((e) => {
    $('loading').hidden = true;
    $('feed-loading').hidden = true;
    showError(e);
    document.body.dataset.ready = 'true';
});
