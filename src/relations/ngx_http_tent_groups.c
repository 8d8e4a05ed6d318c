
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Groups (spec 7.9): local lists that followers, followings, posts and
 * profile sections refer to by id.  One record each, "g <id>":
 * {"id", "name", "created_at", "updated_at"}.  Reading takes read_groups,
 * changing write_groups.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_GROUPS_MAX    10000
#define NGX_HTTP_TENT_GROUP_NAME    256


typedef struct {
    json_t                         *group;
    ngx_str_t                       raw;
} ngx_http_tent_groups_t;


static ngx_int_t ngx_http_tent_groups_listed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_group_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_group_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_group_rename(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


static ngx_int_t
ngx_http_tent_group_id(ngx_http_tent_ctx_t *ctx, ngx_str_t *id)
{
    u_char  *p;

    if (ctx->nparams < 1 || ctx->params[0].len == 0
        || ctx->params[0].len > 64)
    {
        return NGX_ERROR;
    }

    *id = ctx->params[0];

    for (p = id->data; p < id->data + id->len; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_group_name(json_t *body, json_t **name)
{
    json_t  *v;

    v = json_object_get(body, "name");

    if (!json_is_string(v) || json_string_length(v) == 0
        || json_string_length(v) > NGX_HTTP_TENT_GROUP_NAME)
    {
        return NGX_ERROR;
    }

    *name = v;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_is_count(ngx_http_tent_ctx_t *ctx)
{
    return ctx->api_path.len >= 6
           && ngx_strncmp(ctx->api_path.data + ctx->api_path.len - 6,
                          "/count", 6) == 0;
}


/* GET and HEAD /groups, GET /groups/count */

ngx_int_t
ngx_http_tent_groups_list(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                  start, end, v, key;
    ngx_int_t                  limit;
    ngx_http_tent_store_op_t  *op;

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_GROUPS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    if (ngx_http_tent_key_range(r->pool, &ctx->entity,
                                NGX_HTTP_TENT_TABLE_GROUP, &start, &end)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the groups' range");
    }

    limit = NGX_HTTP_TENT_GROUPS_MAX;

    if (!ngx_http_tent_is_count(ctx) && r->method == NGX_HTTP_GET) {
        limit = 50;

        if (ngx_http_arg(r, (u_char *) "limit", 5, &v) == NGX_OK) {
            limit = ngx_atoi(v.data, v.len);

            if (limit <= 0) {
                return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                                "Invalid limit");
            }

            limit = ngx_min(limit, 200);
        }

        /* since_id: after that id; before_id: before it (ids sort) */

        if (ngx_http_arg(r, (u_char *) "since_id", 8, &v) == NGX_OK
            && v.len && v.len <= 64)
        {
            if (ngx_http_tent_key(r->pool, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_GROUP, &v, &key)
                != NGX_OK)
            {
                return ngx_http_tent_internal_error(r,
                                                "building the since_id key");
            }

            if (ngx_http_tent_key_after(r->pool, &key, &start) != NGX_OK) {
                return ngx_http_tent_internal_error(r,
                                                "building the since_id key");
            }
        }

        if (ngx_http_arg(r, (u_char *) "before_id", 9, &v) == NGX_OK
            && v.len && v.len <= 64
            && ngx_http_tent_key(r->pool, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_GROUP, &v, &end)
               != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                                "building the before_id key");
        }
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &start, &end, limit, 0) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the groups' scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_groups_listed);
}


static ngx_int_t
ngx_http_tent_groups_listed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t               *list, *group, *count;
    u_char               *p;
    ngx_int_t             rc;
    ngx_str_t             key, value;
    ngx_uint_t            n;
    ngx_table_elt_t      *h;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }


    list = ngx_http_tent_json_own(r->pool, json_array());
    if (list == NULL) {
        return ngx_http_tent_internal_error(r, "building the groups' list");
    }

    n = 0;

    while ((rc = ngx_http_tent_store_next(op, &key, &value)) == NGX_OK) {
        n++;

        if (ngx_http_tent_is_count(ctx) || r->method == NGX_HTTP_HEAD) {
            continue;
        }

        group = ngx_http_tent_json_parse(&value, r->connection->log);
        if (group) {
            json_array_append_new(list, group);
        }
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "reading the groups' rows");
    }

    if (ngx_http_tent_is_count(ctx)) {
        count = ngx_http_tent_json_own(r->pool, json_integer(n));
        if (count == NULL) {
            return ngx_http_tent_internal_error(r, "building the count");
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, count);
    }

    if (r->method == NGX_HTTP_HEAD) {
        h = ngx_list_push(&r->headers_out.headers);
        p = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
        if (h == NULL || p == NULL) {
            return ngx_http_tent_internal_error(r, "adding the Count header");
        }

        h->hash = 1;
        ngx_str_set(&h->key, "Count");
        h->value.data = p;
        h->value.len = ngx_sprintf(p, "%ui", n) - p;
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, list);
}


/* POST /groups */

ngx_int_t
ngx_http_tent_groups_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_GROUPS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_group_create);
}


static ngx_int_t
ngx_http_tent_group_create(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                    *group, *name;
    ngx_str_t                  id, key, value;
    ngx_http_tent_store_op_t  *op;

    if (ngx_http_tent_group_name(ctx->body, &name) != NGX_OK) {
        return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
    }

    if (ngx_http_tent_random_id(r->pool, NULL, 16, &id) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the group's id");
    }

    group = json_pack("{s:o, s:O, s:I, s:I}",
                      "id", ngx_http_tent_json_string(&id),
                      "name", name,
                      "created_at", (json_int_t) ngx_time(),
                      "updated_at", (json_int_t) ngx_time());

    if (group == NULL
        || ngx_http_tent_json_cleanup(r->pool, group) != NGX_OK)
    {
        json_decref(group);
        return ngx_http_tent_internal_error(r, "building the group");
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_GROUP,
                          &id, &key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the group's key");
    }

    if (ngx_http_tent_json_dump(r->pool, group, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "encoding the group");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    /* a random 16-byte id: "must be absent" guards the impossible clash */

    if (op == NULL
        || ngx_http_tent_store_cas(op, &key, NULL, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the group to the batch");
    }

    ctx->state = group;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_reply_state_json);
}


/* GET, PUT, DELETE /groups/:id */

ngx_int_t
ngx_http_tent_group(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                  id;
    ngx_uint_t                 need;

    need = (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))
           ? NGX_HTTP_TENT_READ_GROUPS : NGX_HTTP_TENT_WRITE_GROUPS;

    if (!ngx_http_tent_has_scopes(ctx, need)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    if (ngx_http_tent_group_id(ctx, &id) != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_GROUP, &id,
                                           ngx_http_tent_group_loaded);
}


static ngx_int_t
ngx_http_tent_group_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *group;
    ngx_int_t                  rc;
    ngx_str_t                  value, id, key;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_groups_t    *st;
    ngx_http_tent_store_op_t  *wop;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    ngx_http_tent_store_value(op, &value);

    group = ngx_http_tent_json_load(r, &value);
    if (group == NULL) {
        return ngx_http_tent_internal_error(r, "reading the group");
    }

    if (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD)) {
        return ngx_http_tent_send_json(r, NGX_HTTP_OK, group);
    }

    if (r->method == NGX_HTTP_PUT) {
        st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_groups_t));
        if (st == NULL) {
            return ngx_http_tent_internal_error(r,
                                                "allocating the rename state");
        }

        st->group = group;
        st->raw = value;
        ctx->state = st;

        return ngx_http_tent_read_json(r, ctx, ngx_http_tent_group_rename);
    }

    /* DELETE */

    (void) ngx_http_tent_group_id(ctx, &id);

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_GROUP,
                          &id, &key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the group's key");
    }

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_store_write(wop, 1) != NGX_OK
        || ngx_http_tent_store_write_del(wop, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                            "adding the delete to the batch");
    }

    ctx->state = NULL;

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_reply_state_json);
}


static ngx_int_t
ngx_http_tent_group_rename(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                    *name;
    ngx_str_t                  id, key, value;
    ngx_http_tent_groups_t    *st;
    ngx_http_tent_store_op_t  *op;

    st = ctx->state;

    if (ngx_http_tent_group_name(ctx->body, &name) != NGX_OK) {
        return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
    }

    json_object_set(st->group, "name", name);
    json_object_set_new(st->group, "updated_at", json_integer(ngx_time()));

    (void) ngx_http_tent_group_id(ctx, &id);

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_GROUP,
                          &id, &key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the group's key");
    }

    if (ngx_http_tent_json_dump(r->pool, st->group, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "encoding the group");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_cas(op, &key, &st->raw, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the group to the batch");
    }

    ctx->state = st->group;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_reply_state_json);
}
