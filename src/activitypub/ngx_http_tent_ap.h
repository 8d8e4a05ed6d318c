
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_AP_H_INCLUDED_
#define _NGX_HTTP_TENT_AP_H_INCLUDED_


/*
 * ActivityPub (issue #29, docs/activitypub.md): discovery, the
 * well-known routes (WebFinger, host-meta, NodeInfo), the actor at the
 * entity URL by content negotiation, the actor's RSA key; its
 * collections.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_httpsig.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_AP_TYPE       "application/activity+json"
#define NGX_HTTP_TENT_AP_PATH       "/activitypub"
#define NGX_HTTP_TENT_AP_NAME_MAX   64

/* a WebFinger resource: longer is a 400 */
#define NGX_HTTP_TENT_AP_RESOURCE_MAX  512

/* the profile section the actor shows (name, bio, avatar_url) */
#define NGX_HTTP_TENT_AP_BASIC      "https://tent.io/types/info/basic"

/* an inbox POST's body: more is a 413 */
#define NGX_HTTP_TENT_AP_INBOX_MAX  (256 * 1024)


/* follow requests waiting for the owner: tent_ap_follow_requests' top */
#define NGX_HTTP_TENT_AP_REQUESTS_MAX  1000

/* the profile section of the owner's choices (its type base) */
#define NGX_HTTP_TENT_AP_SETTINGS  "https://tent.io/types/info/activitypub"


/* the actor's key, as its row keeps it (the private part never served) */
typedef struct {
    ngx_str_t                       public_pem;
    ngx_str_t                       private_pem;
} ngx_http_tent_ap_key_t;

/* an inbox request's signature, from its headers to the key's owner */
typedef struct ngx_http_tent_ap_verify_s  ngx_http_tent_ap_verify_t;

typedef ngx_int_t (*ngx_http_tent_ap_verified_pt)(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v);

struct ngx_http_tent_ap_verify_s {
    ngx_http_tent_httpsig_t         sig;
    ngx_http_tent_httpsig_request_t req;
    json_t                         *activity;
    ngx_str_t                       body;
    ngx_str_t                       actor;        /* the activity's */
    ngx_str_t                       owner;        /* the key's: the actor */
    ngx_str_t                       inbox;        /* the actor's, or empty */
    ngx_str_t                       shared_inbox;
    ngx_str_t                       name;         /* the actor's, or empty */
    ngx_str_t                       icon;         /* its URL, or empty */

    /* private */
    ngx_str_t                       key_url;
    ngx_str_t                       key_host;
    ngx_str_t                       seen;
    void                           *entry;
    ngx_http_tent_ap_verified_pt    done;
    EVP_PKEY                       *sign_key;     /* the entity's, or NULL */
    unsigned                        fetched:1;
    unsigned                        anonymous:1;
    unsigned                        refetch:1;    /* of a kept key */
    unsigned                        signer:1;     /* sign_key read */
};

typedef ngx_int_t (*ngx_http_tent_ap_key_pt)(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_key_t *key);

typedef ngx_int_t (*ngx_http_tent_ap_likes_pt)(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* the key our GETs are signed with: the entity's, NULL if it has none */
typedef ngx_int_t (*ngx_http_tent_ap_signer_pt)(ngx_http_request_t *r,
    EVP_PKEY *key, void *data);


/* ngx_http_tent_ap.c: the directives, the routes, Vary at the root */
ngx_int_t ngx_http_tent_ap_conf(ngx_conf_t *cf,
    ngx_http_tent_srv_conf_t *scf);
ngx_uint_t ngx_http_tent_ap_claim(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_ap_not_yet(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_uint_t ngx_http_tent_ap_accepts(ngx_http_request_t *r);
ngx_int_t ngx_http_tent_ap_post_route(ngx_http_request_t *r);
ngx_int_t ngx_http_tent_ap_name(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_str_t *name);
void ngx_http_tent_ap_actor_name(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_str_t *name);
ngx_int_t ngx_http_tent_ap_name_conf(ngx_http_tent_srv_conf_t *scf,
    ngx_str_t *entity, ngx_str_t *name);
ngx_int_t ngx_http_tent_ap_url(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, const char *what, json_t **url);
ngx_int_t ngx_http_tent_ap_own_route(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_ap_send(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, ngx_str_t *body);
ngx_int_t ngx_http_tent_ap_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *message);

/* ngx_http_tent_webfinger.c: /.well-known/ webfinger, host-meta */
ngx_int_t ngx_http_tent_webfinger_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_tent_ap_dir(ngx_http_request_t *r, ngx_str_t *dir);

/* ngx_http_tent_nodeinfo.c: /.well-known/nodeinfo and its document */
ngx_int_t ngx_http_tent_nodeinfo(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_uint_t document);

/* ngx_http_tent_ap_actor.c: the Person at the entity URL */
ngx_int_t ngx_http_tent_ap_actor_handler(ngx_http_request_t *r);
json_t *ngx_http_tent_ap_actor_doc(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *pem, json_t *basic,
    ngx_uint_t approves);
json_t *ngx_http_tent_ap_basic_shown(json_t *record);
ngx_int_t ngx_http_tent_ap_actor_profile(ngx_http_request_t *r,
    json_t *actor, json_t *basic);

/*
 * ngx_http_tent_ap_collections.c: outbox, followers, following; a post
 * of ours as ActivityStreams.  Anonymous documents: the router reads no
 * credential for them.
 */
ngx_int_t ngx_http_tent_ap_outbox(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_ap_followers(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_ap_following(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_ap_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_ap_keys.c: the actor's key, made on first use */
ngx_int_t ngx_http_tent_ap_key(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_key_pt done);
ngx_int_t ngx_http_tent_ap_key_rotate(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_ap_key_row(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_ap_key_check(ngx_pool_t *pool, ngx_str_t *private_pem,
    ngx_str_t *public_pem, const char **error);

/* ngx_http_tent_ap_sign.c: our GETs signed with the entity's key */
ngx_int_t ngx_http_tent_ap_signer(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, void *data, ngx_http_tent_ap_signer_pt done);
EVP_PKEY *ngx_http_tent_ap_sign_key(ngx_pool_t *pool, ngx_log_t *log,
    ngx_str_t *entity, ngx_str_t *pem);
ngx_int_t ngx_http_tent_ap_sign_fetch(ngx_pool_t *pool,
    ngx_http_tent_fetch_t *f, ngx_str_t *entity, EVP_PKEY *key);

/* ngx_http_tent_ap_verify.c: the signature, the key kept or fetched */
ngx_int_t ngx_http_tent_ap_verify_init(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v, ngx_int_t *rc);
ngx_int_t ngx_http_tent_ap_verify(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v, ngx_http_tent_ap_verified_pt done);
ngx_int_t ngx_http_tent_ap_actor_fetch(ngx_http_request_t *r, ngx_str_t *url,
    EVP_PKEY *key, void *data, ngx_http_tent_fetch_done_pt done);
json_t *ngx_http_tent_ap_actor_read(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f, ngx_str_t *id);
ngx_int_t ngx_http_tent_ap_url_of(json_t *v, ngx_str_t *out);

/* ngx_http_tent_ap_face.c: an actor's name and icon kept in its record */
ngx_int_t ngx_http_tent_ap_face(ngx_pool_t *pool, json_t *person,
    ngx_str_t *name, ngx_str_t *icon);
ngx_uint_t ngx_http_tent_ap_face_set(json_t *ap, ngx_str_t *name,
    ngx_str_t *icon);
ngx_int_t ngx_http_tent_ap_face_alloc(ngx_log_t *log, ngx_str_t *name,
    ngx_str_t *icon, u_char **block);
ngx_int_t ngx_http_tent_ap_face_copy(ngx_pool_t *pool, ngx_str_t *from_name,
    ngx_str_t *from_icon, ngx_str_t *name, ngx_str_t *icon);

/*
 * ngx_http_tent_ap_follow.c: POST {api}/followings of an ActivityPub
 * actor (acct:NAME@HOST, @NAME@HOST, or an actor URL without a Tent
 * profile): WebFinger, the actor, the following and our Follow queued
 */
ngx_uint_t ngx_http_tent_ap_following_handle(ngx_http_request_t *r,
    ngx_str_t *entity);
ngx_uint_t ngx_http_tent_ap_enabled(ngx_http_request_t *r);
ngx_int_t ngx_http_tent_ap_following_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_ap_following_answer(ngx_http_request_t *r,
    json_t *record);
void ngx_http_tent_ap_verify_forget(ngx_http_tent_ap_verify_t *v);

/* ngx_http_tent_ap_inbox.c: POST of the inbox and the shared inbox */
ngx_int_t ngx_http_tent_ap_inbox(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_ap_inbox_posts.c: Update, Delete of a post; Announce */
ngx_int_t ngx_http_tent_ap_inbox_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v);
ngx_int_t ngx_http_tent_ap_inbox_delete(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v);
ngx_int_t ngx_http_tent_ap_inbox_announce(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v);
ngx_int_t ngx_http_tent_ap_inbox_reply(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post);
ngx_int_t ngx_http_tent_ap_inbox_person(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v);

/*
 * ngx_http_tent_ap_requests.c: follows the owner approves (the profile
 * section's choice): held, listed, accepted, rejected, undone
 */
ngx_int_t ngx_http_tent_ap_settings_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *key);
ngx_uint_t ngx_http_tent_ap_approves(ngx_str_t *section, ngx_log_t *log);
ngx_int_t ngx_http_tent_ap_follower_add(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op,
    ngx_str_t *actor, ngx_str_t *inbox, ngx_str_t *shared_inbox,
    ngx_str_t *name, ngx_str_t *icon, json_t *follow, ngx_uint_t first,
    ngx_str_t *id);
ngx_int_t ngx_http_tent_ap_request_hold(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v);
ngx_int_t ngx_http_tent_ap_request_undo(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v,
    ngx_str_t *follow_id, ngx_uint_t embedded);
ngx_int_t ngx_http_tent_ap_requests(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_ap_request_accept(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_ap_request_reject(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


/*
 * ngx_http_tent_ap_person.c: our Update(Person) when the actor changes
 * (the basic profile section, a new key), one per follower inbox, in
 * the caller's own write.  The caller keeps the state in its own and
 * calls prepare (reads the key or the section, the followers; "done"
 * comes back with ctx->state as it was), then queue into its write
 * (nothing when the reads failed, or found no key or no follower); the
 * caller may set "basic" (with has_basic) up to the queue.
 */
typedef struct {
    void                           *caller;      /* its ctx->state */
    ngx_http_tent_route_pt          done;
    ngx_str_t                       pem;         /* given, or read */
    json_t                         *basic;       /* shown content */
    unsigned                        has_basic:1; /* given: not read */
    unsigned                        approves:1;  /* the owner's choice */
    unsigned                        has_approves:1; /* given: not read */
    unsigned                        ready:1;     /* prepared */
    unsigned                        found:1;     /* the key, followers */
    json_t                         *activity;
    ngx_array_t                    *inboxes;     /* ngx_str_t, distinct */
    ngx_str_t                       start;
    ngx_str_t                       end;
    ngx_uint_t                      scanned;
    ngx_uint_t                      bounded;     /* stopped at a bound */
} ngx_http_tent_ap_person_t;

ngx_uint_t ngx_http_tent_ap_person_changed(ngx_http_request_t *r,
    json_t *old, json_t *record);
ngx_int_t ngx_http_tent_ap_person_prepare(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_person_t *ps,
    ngx_http_tent_route_pt done);
ngx_int_t ngx_http_tent_ap_person_queue(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_person_t *ps,
    ngx_http_tent_store_op_t *op);


/*
 * ngx_http_tent_ap_likes.c: a Like of one of our posts and its Undo; the
 * count in the post's object and the owner's GET; the rows of a post
 * deleted
 */
ngx_int_t ngx_http_tent_ap_inbox_like(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v, json_t *object,
    ngx_uint_t undo);
ngx_int_t ngx_http_tent_ap_likes_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *id, json_t *out);
ngx_int_t ngx_http_tent_ap_likes_object(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *id, json_t *obj);
ngx_int_t ngx_http_tent_ap_likes_forget(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *id, ngx_http_tent_ap_likes_pt next);


#endif /* _NGX_HTTP_TENT_AP_H_INCLUDED_ */
