
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A same-node batch's read answered, and its one write (the batches
 * themselves: ngx_http_tent_local_batch.c).
 *
 * The read (MGET) brings every recipient's credential row (each once a
 * batch, however many of its jobs name it), each recipient's copy of
 * the post, and a delete post's target copy.  Then each job gets what
 * POST /notifications/:id would answer (ngx_http_tent_local.c checks
 * the credential, ngx_http_tent_receive.c the post: the same rules),
 * and the one write (synced) holds every copy written or replaced,
 * every target removed, and every job's settlement with its status
 * record: a lost write loses both, the job runs again and finds what
 * the write left.  A job whose recipient has no credential row of its
 * key id here goes over HTTP after all, as before.  Each post is
 * rendered and checked once a batch for each sender.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_local.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_receive.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


static ngx_uint_t ngx_http_tent_local_direct(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l, ngx_uint_t status, ngx_uint_t write,
    ngx_http_tent_local_post_t *lp, ngx_http_tent_received_t *st,
    json_t *post, json_t *target);
static ngx_http_tent_local_post_t *ngx_http_tent_local_post(
    ngx_http_tent_local_batch_t *b, ngx_http_tent_job_t *t,
    ngx_str_t *sender);
static void ngx_http_tent_local_written(ngx_http_tent_store_op_t *op);
static ngx_uint_t ngx_http_tent_local_apps(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l);
static ngx_int_t ngx_http_tent_local_ref(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l, ngx_http_tent_received_t *st, json_t **post,
    json_t **target, ngx_uint_t *write);
static ngx_int_t ngx_http_tent_local_ref_rows(
    ngx_http_tent_local_batch_t *b, ngx_http_tent_local_t *l,
    ngx_http_tent_local_post_t *lp, ngx_http_tent_received_t *st,
    json_t *post, json_t *target);
static ngx_int_t ngx_http_tent_local_ref_once(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l, ngx_http_tent_local_post_t *lp);


void
ngx_http_tent_local_read(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_local_batch_t *b = op->data;

    ngx_uint_t                    i, j, outcome;
    ngx_http_tent_local_t       **items, **tp;
    ngx_http_tent_entity_conf_t  *to;

    items = b->items.elts;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_local_answer(b, op) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_WARN, op->log, 0,
                      "tent local batch: the read failed (store status "
                      "%ui): %ui jobs later", op->status, b->items.nelts);
        goto again;
    }

    b->wop = ngx_http_tent_store_op_create(b->pool, op->log);

    if (b->wop == NULL || ngx_http_tent_store_write(b->wop, 1) != NGX_OK) {
        goto again;
    }

    for (i = 0; i < b->items.nelts; i++) {

        /*
         * A write this big goes as it is: the jobs left wait, in their
         * order, for the next batch (its read sees what this one wrote)
         */

        if (ngx_http_tent_store_op_size(b->wop) >= NGX_HTTP_TENT_LOCAL_BYTES)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, op->log, 0,
                           "tent local batch: the write is full: %ui jobs "
                           "for the next batch", b->items.nelts - i);

            for (j = b->items.nelts; j > i; j--) {
                ngx_queue_insert_head(&b->jobs->pending,
                                      &items[j - 1]->queue);
                b->jobs->npending++;
            }

            break;
        }

        outcome = ngx_http_tent_local_job(b, items[i]);

        if (outcome == (ngx_uint_t) NGX_DECLINED) {
            continue;               /* over HTTP, or over already */
        }

        tp = ngx_array_push(&b->settled);
        if (tp == NULL) {
            ngx_http_tent_local_done(items[i]);
            continue;
        }

        *tp = items[i];
    }

    if (b->settled.nelts == 0) {
        ngx_http_tent_local_end(b);
        return;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, op->log, 0,
                   "tent local batch: %ui jobs settled in one write, "
                   "%uz bytes", b->settled.nelts,
                   ngx_http_tent_store_op_size(b->wop));

    /*
     * Into its recipients only while they are active: an operator's
     * disable or delete since the engine chose this way is checked by
     * the store with the write (docs/store.md, "The registry fence")
     */

    tp = b->settled.elts;
    to = NULL;

    for (i = 0; i < b->settled.nelts; i++) {
        if (tp[i]->to == to) {
            continue;
        }

        to = tp[i]->to;

        if (ngx_http_tent_store_fence(b->wop, &to->entity, 0) != NGX_OK) {
            b->wop->status = NGX_HTTP_TENT_STORE_ERROR;
        }
    }

    /* and the senders' settlements: only into the sender a job was of */

    for (i = 0; i < b->settled.nelts; i++) {
        if (ngx_http_tent_store_fence_rows(b->wop,
                                           &tp[i]->task->task.ent->entity,
                                           tp[i]->task->task.incarnation)
            != NGX_OK)
        {
            b->wop->status = NGX_HTTP_TENT_STORE_ERROR;
        }
    }

    b->wop->handler = ngx_http_tent_local_written;
    b->wop->data = b;

    /* spoilt while it was built: none of it goes */

    if (b->wop->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_store_submit(b->wop) != NGX_OK)
    {
        b->wop->status = NGX_HTTP_TENT_STORE_ERROR;
        ngx_http_tent_local_written(b->wop);
    }

    return;

again:

    for (i = 0; i < b->items.nelts; i++) {
        ngx_http_tent_local_done(items[i]);
    }

    ngx_http_tent_local_end(b);
}


/* the read's answer: the credential rows parsed, the copies kept */

ngx_int_t
ngx_http_tent_local_answer(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t                    value;
    ngx_uint_t                   i, found;
    ngx_http_tent_local_t      **items;
    ngx_http_tent_local_cred_t  *cred;

    cred = b->creds.elts;

    for (i = 0; i < b->creds.nelts; i++) {
        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        if (!found) {
            cred[i].status = NGX_HTTP_TENT_STORE_NOT_FOUND;
            continue;
        }

        /* a recipient's row, the same for each post: parsed once */

        cred[i].row = ngx_http_tent_record_parse(op->log, &cred[i].key,
                                                 &value);

        if (cred[i].row == NULL
            || ngx_http_tent_json_cleanup(b->pool, cred[i].row) != NGX_OK)
        {
            json_decref(cred[i].row);
            cred[i].row = NULL;
            cred[i].status = NGX_HTTP_TENT_STORE_ERROR;
        }
    }

    items = b->items.elts;

    for (i = 0; i < b->items.nelts; i++) {
        items[i]->found = 0;

        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        if (found) {
            items[i]->found |= 1;
            items[i]->copy = value;
        }

        if (items[i]->target_key.len) {
            if (ngx_http_tent_store_next_value(op, &found, &value)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            if (found) {
                items[i]->found |= 2;
                items[i]->target = value;
            }
        }

        /* the recipient's block of the sender, unless known */

        if (items[i]->unblocked) {
            continue;
        }

        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        if (found) {
            items[i]->found |= 4;

        } else {
            ngx_http_tent_local_unblocked(b, items[i]);
        }
    }

    return NGX_OK;
}


/*
 * One job: what POST /notifications/:id would answer, its rows and its
 * settlement into the batch's write.  NGX_DECLINED: not in the write
 * (over HTTP after all, or the task is over).  A fan-out's recipient
 * with no job (b->direct): its rows and its record, or NGX_DECLINED for
 * anything but a 200 (it gets a job).
 */

ngx_uint_t
ngx_http_tent_local_job(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l)
{
    json_t                      *current, *copy;
    ngx_str_t                    sender, key, value;
    ngx_uint_t                   status, outcome, write, i;
    ngx_http_tent_job_t         *t;
    ngx_http_tent_received_t     st;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_local_post_t  *lp;
    ngx_http_tent_local_cred_t  *cred;

    t = l->task;
    cred = &((ngx_http_tent_local_cred_t *) b->creds.elts)[l->cred];

    write = 0;
    current = NULL;
    copy = NULL;
    lp = NULL;
    ngx_str_null(&value);
    ngx_memzero(&st, sizeof(ngx_http_tent_received_t));

    if (cred->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {

        if (b->direct) {
            return (ngx_uint_t) NGX_DECLINED;   /* a job: HTTP's to carry */
        }

        /*
         * Not this store's to say: the entity may be served elsewhere (a
         * node behind a front that routes names has a block for every
         * name).  HTTP asks whoever serves the URL; if that is us, its
         * MAC check answers the 401 this would have.
         */

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent local: \"%V\" has no credential of that key "
                       "id here: over HTTP", &l->to->entity);
        ngx_http_tent_local_slot(l);
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_PASSED);
        return (ngx_uint_t) NGX_DECLINED;
    }

    if (cred->row == NULL) {
        status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        goto settle;
    }

    status = ngx_http_tent_local_credential(l, cred->row, &sender);
    if (status != NGX_HTTP_OK) {
        goto settle;
    }

    /* blocked by the recipient: refused as its route refuses it */

    if (l->found & 4) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent local: \"%V\" blocked \"%V\": refused",
                       &l->to->entity, &t->task.ent->entity);
        status = NGX_HTTP_FORBIDDEN;
        goto settle;
    }

    /* the post as it would go over HTTP, checked as the route checks it */

    lp = ngx_http_tent_local_post(b, t, &sender);

    if (lp == NULL) {
        status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        goto settle;
    }

    if (lp->rc != NGX_OK) {
        status = (lp->rc == NGX_ERROR) ? NGX_HTTP_INTERNAL_SERVER_ERROR
                                       : (ngx_uint_t) lp->rc;
        goto settle;
    }

    st = lp->st;

    /* the keys read are the keys the rules name, or it is tried again */

    if ((ngx_http_tent_local_refs(l)
         ? ngx_http_tent_ref_key(b->pool, &l->to->entity, &st.entity, &st.id,
                                 &key)
         : ngx_http_tent_post_key(b->pool, &l->to->entity, &st.entity,
                                  &st.id, -1, &key))
        != NGX_OK
        || key.len != l->copy_key.len
        || ngx_memcmp(key.data, l->copy_key.data, key.len) != 0
        || (st.deletes.len != 0) != (l->target_key.len != 0))
    {
        status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        goto settle;
    }

    status = NGX_HTTP_OK;

    /* the post stays in its author's rows: the recipient's references */

    if (ngx_http_tent_local_refs(l)) {
        if (ngx_http_tent_local_ref(b, l, &st, &current, &copy, &write)
            != NGX_OK)
        {
            status = NGX_HTTP_INTERNAL_SERVER_ERROR;
            write = 0;
        }

        goto settle;
    }

    if (!(l->found & 1)) {

        /* a first copy: the one rendering of the batch */

        if (lp->value.data == NULL
            && ngx_http_tent_received_value(b->pool, &lp->st, NULL,
                                            &lp->value)
               != NGX_OK)
        {
            status = NGX_HTTP_INTERNAL_SERVER_ERROR;
            goto settle;
        }

        value = lp->value;
        write = 1;

    } else {
        current = ngx_http_tent_json_parse(&l->copy, t->task.dl->log);

        if (current == NULL
            || ngx_http_tent_json_cleanup(b->pool, current) != NGX_OK)
        {
            json_decref(current);
            status = NGX_HTTP_INTERNAL_SERVER_ERROR;
            goto settle;
        }

        /* only a newer version replaces it, keeping its times */

        if (json_integer_value(json_object_get(current, "version"))
            < st.version)
        {
            st.post = json_deep_copy(lp->st.post);

            if (st.post == NULL
                || ngx_http_tent_json_cleanup(b->pool, st.post) != NGX_OK
                || ngx_http_tent_received_value(b->pool, &st, current,
                                                &value)
                   != NGX_OK)
            {
                json_decref(st.post);
                status = NGX_HTTP_INTERNAL_SERVER_ERROR;
                goto settle;
            }

            write = 1;
        }
    }

    /* a delete post's target, as the route removes it after storing */

    if (write && (l->found & 2)) {
        copy = ngx_http_tent_json_parse(&l->target, t->task.dl->log);

        if (copy == NULL
            || ngx_http_tent_json_cleanup(b->pool, copy) != NGX_OK)
        {
            json_decref(copy);
            copy = NULL;
            status = NGX_HTTP_INTERNAL_SERVER_ERROR;
            goto settle;
        }
    }

settle:

    if (b->direct) {
        return ngx_http_tent_local_direct(b, l, status, write, lp, &st,
                                          current, copy);
    }

    outcome = ngx_http_tent_local_outcome(l, status);

    ngx_http_tent_local_slot(l);

    wop = ngx_http_tent_delivery_settlement(t, outcome);
    if (wop == NULL) {
        return (ngx_uint_t) NGX_DECLINED;       /* over, logged */
    }

    i = 0;

    if (write && ngx_http_tent_local_refs(l)) {
        i = (ngx_http_tent_local_ref_rows(b, l, lp, &st, current, copy)
             != NGX_OK);

    } else if (write
        && (ngx_http_tent_received_rows(b->pool, &l->to->entity, b->wop, &st,
                                        &value,
                                        NGX_HTTP_TENT_RECEIVED_ROW
                                        | (ngx_http_tent_local_apps(b, l)
                                           ? 0
                                           : NGX_HTTP_TENT_RECEIVED_NO_APPS))
            != NGX_OK
            || (copy
                && ngx_http_tent_received_delete_rows(b->pool,
                                                      &l->to->entity,
                                                      b->wop, &st, copy)
                   != NGX_OK)))
    {
        i = 1;
    }

    if (i || ngx_http_tent_store_batch_append(b->wop, wop) != NGX_OK) {

        /* the batch's write is spoilt: none of it goes, all run again */

        ngx_log_error(NGX_LOG_ERR, t->task.dl->log, 0,
                      "tent local batch: building the write failed");
        b->wop->status = NGX_HTTP_TENT_STORE_ERROR;
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent local batch: post \"%V\" to \"%V\": %ui, %s",
                   &t->task.post_id, &l->to->entity, status,
                   write ? (copy ? "stored, its target removed" : "stored")
                         : "nothing written");

    return outcome;
}


/* the post of a due batch as "sender"'s: checked and rendered once */

static ngx_http_tent_local_post_t *
ngx_http_tent_local_post(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_job_t *t, ngx_str_t *sender)
{
    json_t                      *body;
    ngx_uint_t                   i;
    const char                  *error;
    ngx_http_tent_local_post_t  *lp;

    lp = b->posts.elts;

    for (i = 0; i < b->posts.nelts; i++) {
        if (lp[i].post == t->task.post
            && lp[i].sender.len == sender->len
            && ngx_strncmp(lp[i].sender.data, sender->data, sender->len) == 0)
        {
            return &lp[i];
        }
    }

    lp = ngx_array_push(&b->posts);
    if (lp == NULL) {
        return NULL;
    }

    ngx_memzero(lp, sizeof(ngx_http_tent_local_post_t));
    lp->post = t->task.post;
    lp->sender = *sender;

    /* what a follower may see (ngx_http_tent_delivery_body) */

    body = ngx_http_tent_delivery_body(t->task.post, NULL);

    if (body == NULL || ngx_http_tent_json_cleanup(b->pool, body) != NGX_OK) {
        json_decref(body);
        lp->rc = NGX_ERROR;
        return lp;
    }

    lp->rc = ngx_http_tent_received_parse(b->pool, body, sender, 0, &lp->st,
                                          &error);

    if (lp->rc != NGX_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent local batch: post \"%V\": %s", &t->task.post_id,
                       error);

        if (lp->rc == NGX_ERROR) {
            ngx_log_error(NGX_LOG_ERR, t->task.dl->log, 0,
                          "tent receive: %s failed", error);
        }
    }

    return lp;
}


/* the write answered: every job settled, or every job runs again */

static void
ngx_http_tent_local_written(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_local_batch_t *b = op->data;

    ngx_uint_t               i;
    ngx_http_tent_local_t  **tp;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, op->log, 0,
                      "tent local batch: the write failed (store status "
                      "%ui); %ui jobs run again", op->status,
                      b->settled.nelts);
    }

    tp = b->settled.elts;

    for (i = 0; i < b->settled.nelts; i++) {
        if (op->status != NGX_HTTP_TENT_STORE_OK) {
            ngx_http_tent_queue_again(&tp[i]->task->task);

        } else {
            tp[i]->task->task.gone = 1;          /* removed, or put again */
        }

        ngx_http_tent_local_done(tp[i]);
    }

    ngx_http_tent_local_end(b);
}


/* may an app of the recipient be subscribed: as far as the engine knows */

static ngx_uint_t
ngx_http_tent_local_apps(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l)
{
    /* the outbox pass's census, in the shared zone (ngx_http_tent_shm.h) */

    if (!ngx_http_tent_apps_none((ngx_cycle_t *) ngx_cycle, &l->to->entity))
    {
        return 1;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, b->jobs->dl->log, 0,
                   "tent local batch: no app of \"%V\" subscribed: its copy "
                   "has no outbox row", &l->to->entity);

    return 0;
}


/*
 * tent_same_node_rows index: what the references will be.  A first
 * delivery, or a newer version than the "l" row names (keeping its
 * times, so its feed rows keep their keys), is written; an equal or
 * older one is not.  "post": the received post with the times its rows
 * are made of; "target": a delete post's target reference, as read.
 */

static ngx_int_t
ngx_http_tent_local_ref(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l, ngx_http_tent_received_t *st, json_t **post,
    json_t **target, ngx_uint_t *write)
{
    json_t       *current, *p;
    const char  **k;

    static const char  *kept[] = { "received_at", "published_at",
                                   "updated_at", "rus", NULL };

    *write = 0;
    *post = NULL;
    *target = NULL;
    current = NULL;

    if (l->found & 1) {
        current = ngx_http_tent_json_parse(&l->copy, b->jobs->dl->log);

        if (current == NULL
            || ngx_http_tent_json_cleanup(b->pool, current) != NGX_OK)
        {
            json_decref(current);
            return NGX_ERROR;
        }

        if (json_integer_value(json_object_get(current, "v")) >= st->version)
        {
            return NGX_OK;
        }
    }

    /*
     * The batch's post is its recipients': a newer version gets a copy
     * of its top level with the reference's times
     */

    p = st->post;

    if (current) {
        p = json_copy(st->post);

        if (p == NULL || ngx_http_tent_json_cleanup(b->pool, p) != NGX_OK) {
            json_decref(p);
            return NGX_ERROR;
        }

        for (k = kept; *k; k++) {
            json_object_set(p, *k, json_object_get(current, *k));
        }
    }

    if (l->found & 2) {
        *target = ngx_http_tent_json_parse(&l->target, b->jobs->dl->log);

        if (*target == NULL
            || ngx_http_tent_json_cleanup(b->pool, *target) != NGX_OK)
        {
            json_decref(*target);
            *target = NULL;
            return NGX_ERROR;
        }
    }

    *post = p;
    *write = 1;

    return NGX_OK;
}


/*
 * The references into the batch's write: the "l" row (where the post is,
 * the follower row it came by, the version, the times), three feed rows
 * that say the same, the outbox row for the recipient's apps (whose
 * fan-out reads the author's post), and a delete's target references
 * removed.  No copy, no version row.  What all the post's recipients
 * share is made once a batch (ngx_http_tent_local_ref_once); a
 * recipient's own rows are printed, not packed and dumped.
 */

static ngx_int_t
ngx_http_tent_local_ref_rows(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l, ngx_http_tent_local_post_t *lp,
    ngx_http_tent_received_t *st, json_t *post, json_t *target)
{
    u_char     *p;
    size_t      len;
    json_t     *gone;
    int64_t     ra;
    ngx_str_t   key, value, index, fid;
    ngx_uint_t  i;

    fid = l->task->row.to;             /* a follower's job, claimed so */

    if (l->task->row.kind != NGX_HTTP_TENT_JOB_FOLLOWER
        || fid.len == 0 || fid.len > 128
        || ngx_http_tent_local_ref_once(b, l, lp) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* an id is printed as it is: only what needs no escape */

    for (i = 0; i < fid.len; i++) {
        if (!((fid.data[i] >= '0' && fid.data[i] <= '9')
              || (fid.data[i] >= 'a' && fid.data[i] <= 'z')
              || (fid.data[i] >= 'A' && fid.data[i] <= 'Z')
              || fid.data[i] == '-' || fid.data[i] == '_'))
        {
            return NGX_ERROR;
        }
    }

    ra = (int64_t) json_integer_value(json_object_get(post, "received_at"));

    len = sizeof("{,\"f\":\"\",\"v\":,\"rus\":,\"received_at\":,"
                 "\"published_at\":,\"updated_at\":}")
          + lp->author.len + fid.len + 5 * NGX_INT64_LEN;

    value.data = ngx_pnalloc(b->pool, len);
    if (value.data == NULL) {
        return NGX_ERROR;
    }

    value.len = ngx_sprintf(value.data,
                            "{%V,\"f\":\"%V\",\"v\":%L,\"rus\":%L,"
                            "\"received_at\":%L,\"published_at\":%L,"
                            "\"updated_at\":%L}",
                            &lp->author, &fid, (int64_t) st->version,
                            (int64_t) json_integer_value(
                                json_object_get(post, "rus")),
                            ra,
                            (int64_t) json_integer_value(
                                json_object_get(post, "published_at")),
                            (int64_t) json_integer_value(
                                json_object_get(post, "updated_at")))
                - value.data;

    /* the feed rows' value: the post's, less its "}", then the rest */

    len = lp->index.len + 1 + lp->author.len
          + sizeof(",\"f\":\"\",\"ra\":}") + fid.len + NGX_INT64_LEN;

    index.data = ngx_pnalloc(b->pool, len);
    if (index.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(index.data, lp->index.data, lp->index.len - 1);
    index.len = ngx_sprintf(p, ",%V,\"f\":\"%V\",\"ra\":%L}",
                            &lp->author, &fid, ra)
                - index.data;

    if (ngx_http_tent_ref_key(b->pool, &l->to->entity, &st->entity,
                              &st->id, &key)
        != NGX_OK
        || ngx_http_tent_store_write_put(b->wop, &key, &value) != NGX_OK
        || ngx_http_tent_post_index_ref_rows(b->pool, &l->to->entity, b->wop,
                                             post, &index, 0)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the apps' fan-out reads the post where "l" says it is */

    if (ngx_http_tent_local_apps(b, l)
        && ngx_http_tent_delivery_mark(b->pool, &l->to->entity, b->wop,
                                       lp->told)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (target == NULL) {
        return NGX_OK;
    }

    /* a delete post: the references of the post it names go */

    gone = json_pack("{s:s%, s:s%, s:O, s:O, s:O, s:O}",
                     "entity", st->entity.data, st->entity.len,
                     "id", st->deletes.data, st->deletes.len,
                     "rus", json_object_get(target, "rus"),
                     "received_at", json_object_get(target, "received_at"),
                     "published_at", json_object_get(target, "published_at"),
                     "updated_at", json_object_get(target, "updated_at"));

    if (gone == NULL || ngx_http_tent_json_cleanup(b->pool, gone) != NGX_OK) {
        json_decref(gone);
        return NGX_ERROR;
    }

    if (ngx_http_tent_ref_key(b->pool, &l->to->entity, &st->entity,
                              &st->deletes, &key)
        != NGX_OK
        || ngx_http_tent_store_write_del(b->wop, &key) != NGX_OK
        || ngx_http_tent_post_index_ref_rows(b->pool, &l->to->entity, b->wop,
                                             gone, NULL, 1)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, b->jobs->dl->log, 0,
                   "tent local batch: \"%V\": references of post \"%V\" "
                   "removed", &l->to->entity, &st->deletes);

    return NGX_OK;
}


/*
 * What every recipient of a post in the batch shares: its feed rows'
 * value, the author as JSON ("l"), and the post its apps' outbox rows
 * are made of (the post and "l": ngx_http_tent_delivery_mark() reads
 * no time of it)
 */

static ngx_int_t
ngx_http_tent_local_ref_once(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l, ngx_http_tent_local_post_t *lp)
{
    json_t     *a;
    ngx_str_t  *author;

    if (lp->told) {
        return NGX_OK;
    }

    author = &l->task->task.ent->entity;

    a = json_pack("{s:s%}", "l", author->data, author->len);

    if (a == NULL || ngx_http_tent_json_cleanup(b->pool, a) != NGX_OK) {
        json_decref(a);
        return NGX_ERROR;
    }

    if (ngx_http_tent_json_dump(b->pool, a, &lp->author) != NGX_OK
        || lp->author.len < 2
        || ngx_http_tent_post_index_dump(b->pool, lp->st.post, &lp->index)
           != NGX_OK
        || lp->index.len < 2)
    {
        return NGX_ERROR;
    }

    /* "l":"<author>", without the braces */

    lp->author.data++;
    lp->author.len -= 2;

    lp->told = json_copy(lp->st.post);

    if (lp->told == NULL
        || ngx_http_tent_json_cleanup(b->pool, lp->told) != NGX_OK)
    {
        json_decref(lp->told);
        lp->told = NULL;
        return NGX_ERROR;
    }

    if (json_object_set(lp->told, "l", json_object_get(a, "l")) != 0) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A fan-out's recipient with no job: a 200 writes its references, as a
 * job's would, and the delivery's record "delivered", as a settlement
 * would (its end index row shared with the step's others:
 * ngx_http_tent_delivery_status_ended), into the fan-out's write
 * (b->wop; the recipient's fence comes after its last row:
 * ngx_http_tent_local_direct.c); anything else
 * writes nothing here and gets a job (NGX_DECLINED), whose settlement
 * says it.
 */

static ngx_uint_t
ngx_http_tent_local_direct(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l, ngx_uint_t status, ngx_uint_t write,
    ngx_http_tent_local_post_t *lp, ngx_http_tent_received_t *st,
    json_t *post, json_t *target)
{
    ngx_http_tent_job_t  *t;

    t = l->task;

    if (status != NGX_HTTP_OK) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent local: post \"%V\" to \"%V\": %ui: a job",
                       &t->task.post_id, &l->to->entity, status);
        return (ngx_uint_t) NGX_DECLINED;
    }

    t->status = status;
    t->error = NULL;

    if ((write
         && ngx_http_tent_local_ref_rows(b, l, lp, st, post, target)
            != NGX_OK)
        || ngx_http_tent_delivery_status_direct(t, b->wop, b->ended)
           != NGX_OK)
    {
        /* the fan-out's write is spoilt: none of it goes, all again */

        ngx_log_error(NGX_LOG_ERR, t->task.dl->log, 0,
                      "tent local: building a recipient's rows failed");
        b->wop->status = NGX_HTTP_TENT_STORE_ERROR;
        return (ngx_uint_t) NGX_DECLINED;
    }

    /* counted as decided, as a settlement counts */

    ngx_http_tent_count(NGX_HTTP_TENT_STAT_LOCAL, 1);
    ngx_http_tent_count(NGX_HTTP_TENT_STAT_DELIVERED, 1);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent local batch: post \"%V\" to \"%V\": 200, %s, "
                   "no job", &t->task.post_id, &l->to->entity,
                   write ? (target ? "stored, its target removed"
                                   : "stored")
                         : "nothing written");

    return NGX_HTTP_TENT_DELIVERED;
}
