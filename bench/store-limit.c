/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * bench/store-limit.c: the physical limit of same-node delivery (issue
 * #13) on this machine: LevelDB alone, with the module's options, doing
 * the store work each same-node delivery needs and nothing else (no
 * nginx, no JSON, no threads, no socket), in batches as the module's
 * (docs/federation.md, "Batches"): for each batch the fan-out's write of
 * its jobs (a job row and a pending status record each, not synced), one
 * read of every job's credential row and copy key (the MGET), then one
 * synced write of every copy (the post, its version, three feed index
 * rows), the job's removal and its status record (the settlement).
 *
 *   cc -O2 -o store-limit bench/store-limit.c -lleveldb
 *   ./store-limit DIR [DELIVERIES [BATCH [POST_BYTES]]]
 *
 * DIR must not exist (it is made, then removed by the caller).  Prints
 * "store-limit: D deliveries in S s, R deliveries/s (batch B, post P
 * bytes)".  Defaults: 20000 deliveries, batches of 256, posts of 600
 * bytes (a status post's record as the module stores it, about).
 */


#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <leveldb/c.h>


static double
now(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);

    return ts.tv_sec + ts.tv_nsec / 1e9;
}


/* "<recipient i> 0x00 <table> <rest>": the module's key layout */

static size_t
key(char *buf, unsigned recipient, char table, const char *rest,
    unsigned n)
{
    return (size_t) snprintf(buf, 512, "http://127.0.0.1:%u/e%c%c%s%08u",
                             20000 + recipient % 1000, 0, table, rest, n);
}


int
main(int argc, char **argv)
{
    char                   *err, k[512], *v, *got;
    size_t                  kl, vl, post;
    double                  start, secs;
    unsigned                n, batch, i, j, d;
    leveldb_t              *db;
    leveldb_options_t      *opt;
    leveldb_readoptions_t  *ro;
    leveldb_writeoptions_t *wo, *wa;
    leveldb_writebatch_t   *wb;
    leveldb_filterpolicy_t *bloom;

    if (argc < 2) {
        fprintf(stderr, "usage: store-limit DIR [DELIVERIES [BATCH "
                "[POST_BYTES]]]\n");
        return 2;
    }

    n = argc > 2 ? (unsigned) atoi(argv[2]) : 20000;
    batch = argc > 3 ? (unsigned) atoi(argv[3]) : 256;
    post = argc > 4 ? (size_t) atoi(argv[4]) : 600;

    if (n == 0 || batch == 0 || post < 16 || post > 65536) {
        fprintf(stderr, "store-limit: bad arguments\n");
        return 2;
    }

    opt = leveldb_options_create();
    bloom = leveldb_filterpolicy_create_bloom(10);
    leveldb_options_set_create_if_missing(opt, 1);
    leveldb_options_set_filter_policy(opt, bloom);
    ro = leveldb_readoptions_create();
    wo = leveldb_writeoptions_create();
    leveldb_writeoptions_set_sync(wo, 1);
    wa = leveldb_writeoptions_create();

    err = NULL;
    db = leveldb_open(opt, argv[1], &err);
    if (err) {
        fprintf(stderr, "store-limit: %s\n", err);
        return 1;
    }

    v = malloc(post);
    if (v == NULL) {
        return 1;
    }

    memset(v, 'x', post);

    /* the recipients' credential rows, read by each batch */

    for (i = 0; i < 1000; i++) {
        kl = key(k, i, 'c', "u:", i);
        leveldb_put(db, wo, k, kl, v, 200, &err);
        if (err) {
            fprintf(stderr, "store-limit: %s\n", err);
            return 1;
        }
    }

    start = now();
    wb = leveldb_writebatch_create();

    for (d = 0; d < n; d += batch) {

        /* the fan-out: the jobs and their pending status, not synced */

        leveldb_writebatch_clear(wb);

        for (j = d; j < d + batch && j < n; j++) {
            kl = key(k, 0, 'j', "job", j);
            leveldb_writebatch_put(wb, k, kl, v, 300);
            kl = key(k, 0, 'D', "status", j);
            leveldb_writebatch_put(wb, k, kl, v, 160);
        }

        leveldb_write(db, wa, wb, &err);
        if (err) {
            fprintf(stderr, "store-limit: %s\n", err);
            return 1;
        }

        /* the MGET: each job's credential, and whether its copy is there */

        for (j = d; j < d + batch && j < n; j++) {
            kl = key(k, j, 'c', "u:", j % 1000);
            got = leveldb_get(db, ro, k, kl, &vl, &err);
            free(got);
            kl = key(k, j, 't', "post", j / 1000);
            got = leveldb_get(db, ro, k, kl, &vl, &err);
            free(got);
        }

        /* one synced write: the copies and the settlements */

        leveldb_writebatch_clear(wb);

        for (j = d; j < d + batch && j < n; j++) {
            kl = key(k, j, 't', "post", j / 1000);
            leveldb_writebatch_put(wb, k, kl, v, post);
            kl = key(k, j, 'v', "post", j / 1000);
            leveldb_writebatch_put(wb, k, kl, v, post);
            kl = key(k, j, 'i', "r", j);
            leveldb_writebatch_put(wb, k, kl, v, 80);
            kl = key(k, j, 'i', "p", j);
            leveldb_writebatch_put(wb, k, kl, v, 80);
            kl = key(k, j, 'i', "u", j);
            leveldb_writebatch_put(wb, k, kl, v, 80);
            kl = key(k, 0, 'j', "job", j);
            leveldb_writebatch_delete(wb, k, kl);
            kl = key(k, 0, 'D', "status", j);
            leveldb_writebatch_put(wb, k, kl, v, 160);
            kl = key(k, 0, 'X', "ended", j);
            leveldb_writebatch_put(wb, k, kl, "", 0);
        }

        leveldb_write(db, wo, wb, &err);
        if (err) {
            fprintf(stderr, "store-limit: %s\n", err);
            return 1;
        }
    }

    secs = now() - start;

    printf("store-limit: %u deliveries in %.3f s, %.0f deliveries/s "
           "(batch %u, post %zu bytes)\n", n, secs, n / secs, batch, post);

    leveldb_writebatch_destroy(wb);
    leveldb_close(db);
    leveldb_options_destroy(opt);
    leveldb_filterpolicy_destroy(bloom);
    leveldb_readoptions_destroy(ro);
    leveldb_writeoptions_destroy(wo);
    leveldb_writeoptions_destroy(wa);
    free(v);

    return 0;
}
