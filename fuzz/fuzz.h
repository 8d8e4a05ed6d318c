
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Shared by the fuzz targets: what fuzz/stubs.c provides besides the
 * nginx core symbols themselves.  See docs/fuzzing.md.
 */


#ifndef _NGX_HTTP_TENT_FUZZ_H_INCLUDED_
#define _NGX_HTTP_TENT_FUZZ_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>


/* the fixed "now" of every target: ngx_time() */
#define NGX_FUZZ_NOW  1764745200


/* an invariant of the code under test does not hold: a finding */
#define ngx_fuzz_assert(expr)                                                \
    do {                                                                     \
        if (!(expr)) {                                                       \
            fprintf(stderr, "%s:%d: invariant failed: %s\n",                 \
                    __FILE__, __LINE__, #expr);                              \
            abort();                                                         \
        }                                                                    \
    } while (0)


extern ngx_log_t  ngx_fuzz_log;


/* an exact-size heap copy of the input: ASan sees every overread */
u_char *ngx_fuzz_dup(const uint8_t *data, size_t size);

/* a zeroed request with a pool and a connection; freed with the pool */
ngx_http_request_t *ngx_fuzz_request(ngx_pool_t *pool);


#endif /* _NGX_HTTP_TENT_FUZZ_H_INCLUDED_ */
