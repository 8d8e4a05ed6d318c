
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The followers a profile post was told to, by normalized entity, so
 * that the followings' stage of its fan-out (ngx_http_tent_fanout.c)
 * does not send a mutual entity a second copy.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_fanout.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_posts.h"


static ngx_int_t ngx_http_tent_delivery_told_key(json_t *record, u_char *buf,
    ngx_str_t *key);


/*
 * A profile post goes to our followings too (spec 9.4).  An entity that
 * is both gets one copy, on the follower's path, as tentd's notify_entity
 * (Follower.first || Following.first): two copies reach tentd, which
 * keeps the first and refreshes one of its two records of us.  The
 * followers told are kept by normalized entity for the followings' stage.
 */

ngx_int_t
ngx_http_tent_delivery_told_init(ngx_http_tent_fanout_t *t)
{
    ngx_str_t  type;

    /* only what a following may get: our public profile posts */

    if (t->task.post == NULL
        || ngx_http_tent_json_str(t->task.post, "type", &type) != NGX_OK
        || !ngx_http_tent_post_type_is(&type, "profile")
        || !json_is_true(json_object_get(json_object_get(t->task.post,
                                                         "permissions"),
                                         "public")))
    {
        return NGX_OK;
    }

    t->told = ngx_http_tent_key_set_create(t->task.pool);

    return (t->told == NULL) ? NGX_ERROR : NGX_OK;
}


/*
 * A record's entity in its one spelling, in "buf" (NGX_HTTP_TENT_ENTITY_MAX
 * + NGX_HTTP_TENT_ENTITY_SLACK bytes); what is no entity URL, as it is.
 */

static ngx_int_t
ngx_http_tent_delivery_told_key(json_t *record, u_char *buf, ngx_str_t *key)
{
    ngx_str_t  entity;

    if (ngx_http_tent_json_str(record, "entity", &entity) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_entity_normalize(&entity, buf, key) != NGX_OK) {
        *key = entity;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_delivery_tell(ngx_http_tent_fanout_t *t, json_t *follower)
{
    u_char     buf[NGX_HTTP_TENT_ENTITY_MAX + NGX_HTTP_TENT_ENTITY_SLACK];
    ngx_str_t  key;

    if (ngx_http_tent_delivery_told_key(follower, buf, &key) != NGX_OK) {
        return NGX_OK;
    }

    return ngx_http_tent_key_set_add(t->task.pool, t->told, &key);
}


/* a following told as a follower already: no second copy at its /posts */

ngx_int_t
ngx_http_tent_delivery_was_told(ngx_http_tent_fanout_t *t, json_t *following)
{
    u_char     buf[NGX_HTTP_TENT_ENTITY_MAX + NGX_HTTP_TENT_ENTITY_SLACK];
    ngx_str_t  key;

    if (t->told == NULL
        || ngx_http_tent_delivery_told_key(following, buf, &key) != NGX_OK
        || !ngx_http_tent_key_set_has(t->told, &key))
    {
        return 0;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": following \"%V\" is a "
                   "follower told already", &t->task.post_id, &key);

    return 1;
}
