
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_STORE_IPC_H_INCLUDED_
#define _NGX_HTTP_TENT_STORE_IPC_H_INCLUDED_


/*
 * What the store socket's connections and owner's side
 * (ngx_http_tent_store_ipc.c) and a worker's client
 * (ngx_http_tent_store_ipc_client.c) share; only they include it, after
 * ngx_http_tent_store_private.h.
 */


#include "ngx_http_tent_store_private.h"

#include <sys/un.h>


/* ngx_http_tent_store_ipc.c: a connection, its buffers and frames */
ngx_int_t ngx_http_tent_ipc_sockaddr(ngx_http_tent_store_t *store,
    struct sockaddr_un *sun);
ngx_http_tent_ipc_conn_t *ngx_http_tent_ipc_conn_create(
    ngx_http_tent_store_t *store, ngx_socket_t s);
void ngx_http_tent_ipc_conn_close(ngx_http_tent_ipc_conn_t *conn);
void ngx_http_tent_ipc_conn_release(ngx_http_tent_ipc_conn_t *conn);
ngx_int_t ngx_http_tent_ipc_read(ngx_http_tent_ipc_conn_t *conn);
ngx_int_t ngx_http_tent_ipc_flush(ngx_http_tent_ipc_conn_t *conn);
ngx_int_t ngx_http_tent_ipc_frame(ngx_http_tent_ipc_conn_t *conn,
    uint32_t id, ngx_int_t status, u_char *data, size_t len);
ngx_int_t ngx_http_tent_ipc_frames(ngx_http_tent_ipc_conn_t *conn,
    ngx_int_t (*handler)(ngx_http_tent_ipc_conn_t *conn, uint32_t id,
    u_char *data, size_t len));

/* ngx_http_tent_store_ipc_client.c: a worker's connection to the owner */
void ngx_http_tent_ipc_client_close(ngx_http_tent_store_t *store);


#endif /* _NGX_HTTP_TENT_STORE_IPC_H_INCLUDED_ */
